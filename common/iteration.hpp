// The one iteration protocol of the suite (DESIGN.md, "Where things live"): every phase's timed loop is this
// function with the phase's step plugged in, as google/benchmark's library owns the loop and nccl-tests' common.cu
// owns the sweep. Per iteration: prepare (untimed: refill inputs, synchronise the device), a barrier across the
// ranks (so an iteration's time is the slowest rank's), the watchdog told a step starts, the step itself timed by the
// phase's clock, then the untimed check. Warm-up iterations run first and keep no sample; every timed sample is kept.
//
// Warm-up runs until steady (METRICS.md, "Steady state"): at least plan.warmup iterations; after that, while the median
// of the last kSteadyWindow warm-up times differs from the median of the kSteadyWindow before them by more than
// kSteadyTolerance of it, another, up to max_warmup(plan). A warm-up iteration is timed by the host clock across the
// step and the phase's clock (which synchronises the device). With several ranks every rank goes on while any is not
// steady. plan.warmup 0 means no warm-up at all.
//
// Timed iterations: plan.iters; with plan.min_time_ms > 0 (--min-time-ms, as google/benchmark's min_time), as many
// more as fill that time where the step is short: after warm-up, ceil(min_time_ms / the median of the last warm-up
// window), at least plan.iters and at most most_timed_iters() (every rank runs the largest count any rank chose).
// Without warm-up to estimate the step from, plan.iters.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "common/modes.hpp"

namespace ob {

struct Iteration {
  int index = 0;  // 0 .. warmup + iters - 1 (or steps - 1)
  int iter = 0;  // index - warmup: negative during warm-up, the timed iteration's number after
  bool timed = false;  // this iteration's sample is kept
  bool last = false;  // the loop's last iteration (the last timed one, or the last of plan.steps)
};

struct LoopPlan {
  Mode mode = Mode::kSeq;  // named in the watchdog's progress ("seq warm-up 2", "overlap iteration 4")
  int warmup = 0, iters = 0;  // warm-up, then timed iterations
  int steps = 0;  // > 0: that many untimed steps instead (the checks' fixed step counts)
  MPI_Comm comm = MPI_COMM_NULL;  // barrier before each iteration; MPI_COMM_NULL: a single process, no barrier
  double min_time_ms = 0;  // > 0: timed iterations enough to fill this time (see above)
};

struct CommonOptions;  // common/options.hpp

// The loop a phase runs from its common options: their warm-up, iterations and minimum time.
LoopPlan loop_plan(Mode mode, const CommonOptions& common, MPI_Comm comm = MPI_COMM_NULL, int steps = 0);

struct LoopHooks {
  std::function<void(const Iteration&)> prepare;  // before the barrier, untimed (may be empty)
  std::function<void(const Iteration&)> step;  // the work of one iteration
  // The phase's clock: the step's time in ms, read after it (CUDA events, synchronised). Empty: the protocol times
  // step() with std::chrono::steady_clock (host, OpenMP and MPI work).
  std::function<double(const Iteration&)> elapsed_ms;
  std::function<void(const Iteration&)> check;  // after the step, untimed (may be empty)
};

inline constexpr int kSteadyWindow = 3;
inline constexpr double kSteadyTolerance = 0.05;
inline constexpr int kMostMinTimeIters = 1000;  // --min-time-ms adds timed iterations up to this count

// The most timed iterations a loop of `iters` and `min_time_ms` may run: iters, or max(iters, kMostMinTimeIters)
// with a minimum time. Phases size what they keep per iteration by it.
int most_timed_iters(int iters, double min_time_ms);

// The timed iterations of `plan` after warm-up times `ms` (oldest first): ceil(min_time_ms / the median of the
// last kSteadyWindow of them), between plan.iters and most_timed_iters(); plan.iters without a minimum time or
// warm-up.
int timed_iters(const LoopPlan& plan, const std::vector<double>& ms);

// The most warm-up iterations the loop may run: 4 x max(plan.warmup, 2 windows); 0 without warm-up or when steps > 0.
int max_warmup(const LoopPlan& plan);

// Whether warm-up times `ms` (oldest first) have settled: two full windows whose medians differ by at most the
// tolerance.
bool warmup_is_steady(const std::vector<double>& ms);

// Runs the loop; returns this rank's timed samples in ms (empty when plan.steps > 0). The slowest rank per
// iteration is max_across_ranks() of these (common/stats.hpp), taken where the summary row is made.
std::vector<double> run_iterations(const LoopPlan& plan, const LoopHooks& hooks);

}  // namespace ob
