// The short human table on the console: two header rows (names, then units) like nccl-tests, right-aligned.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ob {

class ConsoleTable {
 public:
  // Each column: {name, unit}; the unit row shows "" for unitless columns.
  explicit ConsoleTable(std::vector<std::pair<std::string, std::string>> columns);
  void add_row(std::vector<std::string> cells);  // throws std::invalid_argument on a wrong cell count
  std::string render() const;

 private:
  std::vector<std::pair<std::string, std::string>> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ob
