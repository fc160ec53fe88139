#include "common/csv_writer.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ob {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string format_number(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

CsvTable::CsvTable(std::vector<std::string> header) : header_(std::move(header)) {
  if (header_.empty()) throw std::invalid_argument("a CSV table needs at least one column");
}

void CsvTable::add_row(std::vector<std::string> row) {
  if (row.size() != header_.size()) {
    throw std::invalid_argument("CSV row has " + std::to_string(row.size()) + " fields, header has " +
                                std::to_string(header_.size()));
  }
  rows_.push_back(std::move(row));
}

std::string CsvTable::to_string() const {
  std::string out;
  auto append_line = [&out](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      out += csv_field(fields[i]);
    }
    out += "\r\n";
  };
  append_line(header_);
  for (const auto& row : rows_) append_line(row);
  return out;
}

}  // namespace ob
