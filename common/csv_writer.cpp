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

CsvTable CsvTable::parse(const std::string& text) {
  std::vector<std::vector<std::string>> lines(1, std::vector<std::string>(1));
  std::size_t line = 1;
  bool quoted = false, line_has_text = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = lines.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        field += c;
      }
    } else if (c == '"') {
      quoted = line_has_text = true;
    } else if (c == ',') {
      lines.back().emplace_back();
      line_has_text = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++line;
      lines.emplace_back(1);
      line_has_text = false;
    } else {
      field += c;
      line_has_text = true;
    }
  }
  if (quoted) throw std::invalid_argument("line " + std::to_string(line) + ": a quoted field does not end");
  if (!line_has_text) lines.pop_back();  // the last line end
  if (lines.empty()) throw std::invalid_argument("no header line");
  CsvTable table(lines.front());
  for (std::size_t k = 1; k < lines.size(); ++k) {
    if (lines[k].size() != table.header_.size()) {
      throw std::invalid_argument("line " + std::to_string(k + 1) + ": " + std::to_string(lines[k].size()) +
                                  " fields, the header has " + std::to_string(table.header_.size()));
    }
    table.rows_.push_back(std::move(lines[k]));
  }
  return table;
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
