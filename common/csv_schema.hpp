// The CSV files' columns, declared once in overlap_bench/core/schema.json (which the Python tools load too) and embedded
// in the binaries when they are built: csv_schema_columns("summary", "leading") is the summary's first columns.
#pragma once

#include <string>
#include <vector>

namespace ob {

// The list `list` ("leading", "config", "columns", ...) of the file kind `kind` ("summary", "timeline", "power");
// std::logic_error where the schema has none (a build from a schema that lacks it).
std::vector<std::string> csv_schema_columns(const std::string& kind, const std::string& list);

}  // namespace ob
