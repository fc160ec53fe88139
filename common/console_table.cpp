#include "common/console_table.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace ob {

ConsoleTable::ConsoleTable(std::vector<std::pair<std::string, std::string>> columns) : columns_(std::move(columns)) {}

void ConsoleTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) throw std::invalid_argument("console table row has the wrong cell count");
  rows_.push_back(std::move(cells));
}

std::string ConsoleTable::render() const {
  std::vector<std::size_t> widths(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const std::size_t unit = columns_[c].second.empty() ? 0 : columns_[c].second.size() + 2;
    widths[c] = std::max(columns_[c].first.size(), unit);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  std::ostringstream out;
  auto line = [&](auto cell_of) {
    out << "#";
    for (std::size_t c = 0; c < columns_.size(); ++c)
      out << "  " << std::setw(static_cast<int>(widths[c])) << cell_of(c);
    out << "\n";
  };
  line([&](std::size_t c) { return columns_[c].first; });
  line([&](std::size_t c) { return columns_[c].second.empty() ? std::string() : "(" + columns_[c].second + ")"; });
  for (const auto& row : rows_) {
    out << " ";
    for (std::size_t c = 0; c < columns_.size(); ++c) out << "  " << std::setw(static_cast<int>(widths[c])) << row[c];
    out << "\n";
  }
  return out.str();
}

}  // namespace ob
