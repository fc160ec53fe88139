#include "common/csv_schema.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/csv_schema_json.hpp"  // generated from overlap_bench/core/schema.json (common/CMakeLists.txt)

namespace ob {

std::vector<std::string> csv_schema_columns(const std::string& kind, const std::string& list) {
  static const nlohmann::json schema = nlohmann::json::parse(kCsvSchemaJson);
  if (!schema.contains(kind) || !schema[kind].contains(list)) {
    throw std::logic_error("overlap_bench/core/schema.json has no '" + kind + "." + list + "'");
  }
  return schema[kind][list].get<std::vector<std::string>>();
}

}  // namespace ob
