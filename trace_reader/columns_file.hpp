// Columns written for Python (overlap_bench/trace/trace_native.py reads them with the array module): the magic line,
// then named sections, each [u32 name length][name][u64 byte length][bytes, zero-padded to 8], little-endian.
#pragma once

#include <string>

#include "trace_reader/columns.hpp"
#include "trace_reader/step_figures.hpp"

namespace ob::trace {

inline constexpr char kColumnsMagic[] = "OBCOLS1\n";

// Writes to `path` + ".part" and renames it to `path` when complete. Throws std::runtime_error on I/O. The kernels'
// flags and the step figures (step_figures.hpp) go with the columns; "figures" says whether they were computed.
void write_columns(const Columns& columns, const std::string& path);
void write_columns(const Columns& columns, const KernelFlags& flags, const StepFigures& figures,
                   const std::string& path);

}  // namespace ob::trace
