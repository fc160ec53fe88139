// ob-analyze's timeline rows (analysis.timeline.csv: rank, lane, name, iter, chunk, start_us, end_us) of one rank,
// written from its columns as pandas' to_csv writes them (floats as Python's repr, a name quoted where the csv module
// quotes it): every kernel of every step in start order, its collectives numbered in their step, times from the
// analysis' origin (the earliest step of every rank, known only once every rank is read: hence a second call).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

namespace ob::trace {

// Python's repr() of a double (the shortest text that reads back to it, fixed from 1e-4 to below 1e16).
void python_repr(double value, std::string& out);

// The sections of a columns file (columns_file.hpp) held in `data`. Throws std::runtime_error where it is not one.
std::map<std::string, std::string_view> read_sections(std::string_view data);

// The rows of the rank whose columns `sections` holds (step_figures' rows), to `out`. Throws std::runtime_error.
void write_timeline(const std::map<std::string, std::string_view>& sections, int64_t rank, double origin, FILE* out);

}  // namespace ob::trace
