// Phase 4 for one configuration (a sweep point): the checks (when asked), every mode, the cross-rank reduction
// (slowest rank) and the summary rows with the derived ideal, bound and bound_ref rows (common/overlap_rows).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

namespace phase4 {

struct PointResult {
  std::vector<ob::SummaryRow> rows;
  std::vector<ob::TimelineEvent> events;  // merged on rank 0
  std::string failure;  // first failed check ("" when all passed), the same on every rank
};

// Steps run by seq and overlap from the same initial weights before their weights are compared.
constexpr int kEquivalenceSteps = 3;
// Most relative (norm) error bf16 communication may put into one step's gradient: bf16 rounds to 8 significant
// bits (2^-9 = 0.2 % per value); ten times that fails.
constexpr double kBf16GradientTolerance = 0.02;
// Most relative error between a strategy's weights and the nccl strategy's after kEquivalenceSteps steps, and between
// its gradient and a plain fp32 all-reduce's, on 2 ranks: another summation order changes the last bits of the
// gradient. On n ranks it is (n - 1) times that, as the bound of a sum of n terms in another order is (n - 1) units
// in the last place: on 4 x H200 ce's weights differed from nccl's by 1.31e-6 after 3 steps (4 MiB buckets).
constexpr double kStrategyTolerance = 1e-6;
inline double strategy_tolerance(int ranks) { return kStrategyTolerance * (ranks > 2 ? ranks - 1 : 1); }

// `calibration` (may be null): the overlap row gets predicted_ms where it holds the point's strategy.
PointResult run_point(const Config& config, Trainer& trainer, MPI_Comm comm, ob::SteadyClock::time_point origin,
                      std::ostream* progress, const Calibration* calibration = nullptr);

// The console's columns: the training modes', or the interference map's.
std::vector<ob::ConsoleColumn> console_columns(const Config& config);

}  // namespace phase4
