// CSV tables with a fixed header and RFC 4180 quoting.
#pragma once

#include <string>
#include <vector>

namespace ob {

// Quotes a field when it holds a comma, a double quote, CR or LF; inner quotes are doubled (RFC 4180).
std::string csv_field(const std::string& text);

// Shortest round-trippable-enough text for a number: up to `digits` significant digits; "nan" and "inf" as such.
std::string format_number(double value, int digits = 9);

class CsvTable {
 public:
  // The table `text` holds (RFC 4180: quoted fields, doubled quotes, CRLF or LF line ends). Throws
  // std::invalid_argument naming the line of a row whose field count differs from the header's, or of an
  // unterminated quote.
  static CsvTable parse(const std::string& text);

  explicit CsvTable(std::vector<std::string> header);
  // Throws std::invalid_argument unless the row has as many fields as the header.
  void add_row(std::vector<std::string> row);
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  std::string to_string() const;  // CRLF line ends, as RFC 4180 says

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ob
