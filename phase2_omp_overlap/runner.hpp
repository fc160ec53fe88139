// Phase 2 end to end, minus I/O: runs the selected modes, derives ideal and bound, and builds the summary rows.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "phase2_omp_overlap/config.hpp"
#include "phase2_omp_overlap/pipeline.hpp"

namespace phase2 {

struct Result {
  std::vector<ModeRun> runs;
  std::vector<ob::SummaryRow> rows;  // one per mode, then ideal and bound when their inputs were run
  std::vector<ob::TimelineEvent> events;
  std::uint64_t wrong = 0;
  std::string first_wrong;
};

// Runs phase 2 as `config` says; progress lines go to `progress` when not null.
Result run(const Config& config, std::ostream* progress);

// The console columns phase 2 shows after mode and time.
std::vector<ob::ConsoleColumn> console_columns();

}  // namespace phase2
