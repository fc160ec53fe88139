// Phase 3 end to end, minus option parsing and file writing: checks (when asked), runs every mode, reduces the
// samples across ranks (slowest rank) and builds the summary rows on rank 0.
#pragma once

#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "phase3_mpi_cuda/backend.hpp"
#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

struct Result {
  std::vector<ob::SummaryRow> rows;       // on every rank (identical)
  std::vector<ob::TimelineEvent> events;  // merged on rank 0
  std::string failure;                    // first failed check, identical on every rank; "" when all passed
};

// The number of steps each strategy runs before its weights are compared with the single-process reference.
constexpr int kReferenceSteps = 3;

Result run(const Config& config, Backend& backend, const std::string& device_name, MPI_Comm comm,
           std::ostream* progress);

std::vector<ob::ConsoleColumn> console_columns();

}  // namespace phase3
