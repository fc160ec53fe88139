// Phase 3 end to end, minus option parsing and file writing: checks (when asked), runs every mode, reduces the
// samples across ranks (slowest rank) and builds the summary rows on rank 0.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase3_mpi_cuda/backend.hpp"
#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

struct Result {
  std::vector<ob::SummaryRow> rows;  // on every rank (identical)
  std::vector<ob::TimelineEvent> events;  // merged on rank 0
  std::string failure;  // first failed check, identical on every rank; "" when all passed
};

// The number of steps each strategy runs before its weights are compared with the single-process reference.
constexpr int kReferenceSteps = 3;

// Timeline times count from `origin` (a list of gradient sizes shares one), else from a barrier at the start.
Result run(const Config& config, Backend& backend, const std::string& device_name, MPI_Comm comm,
           std::ostream* progress, std::optional<ob::SteadyClock::time_point> origin = std::nullopt);

std::vector<ob::ConsoleColumn> console_columns();

// Makes this rank's backend for a configuration (its shard, on its device).
using BackendFactory = std::function<std::unique_ptr<Backend>(const Config&)>;

constexpr int kMaxBatch = 1 << 24;  // --batch's largest value

// --batch auto: the global batch whose backward chunks (what the all-reduces can hide behind, OSU's sizing) last as
// long as the comm-only step, found by measuring both (secant steps from 64 and 512 rows per rank). Throws
// ob::UsageError naming --batch when that many rows do not fit in memory, or when four steps leave the backward
// under half the all-reduce (a compute that does not grow with its rows).
int batch_for_comm(const Config& config, const BackendFactory& make, MPI_Comm comm, std::ostream* progress);

// The rows at which a line through (b0, t0) and (b1, t1) reaches target_ms (proportional when it does not rise).
int rows_for_time(double target_ms, int b0, double t0, int b1, double t1);

}  // namespace phase3
