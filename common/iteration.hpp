// The one iteration protocol of the suite (DESIGN.md, "Where things live"): every phase's timed loop is this
// function with the phase's step plugged in, as google/benchmark's library owns the loop and nccl-tests' common.cu
// owns the sweep. Per iteration: prepare (untimed: refill inputs, synchronise the device), a barrier across the
// ranks (so an iteration's time is the slowest rank's), the watchdog told a step starts, the step itself timed by the
// phase's clock, then the untimed check. Warm-up iterations run first and keep no sample; every timed sample is kept.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "common/modes.hpp"

namespace ob {

struct Iteration {
  int index = 0;       // 0 .. warmup + iters - 1 (or steps - 1)
  int iter = 0;        // index - warmup: negative during warm-up, the timed iteration's number after
  bool timed = false;  // this iteration's sample is kept
};

struct LoopPlan {
  Mode mode = Mode::kSeq;          // named in the watchdog's progress ("seq warm-up 2", "overlap iteration 4")
  int warmup = 0, iters = 0;       // warm-up, then timed iterations
  int steps = 0;                   // > 0: that many untimed steps instead (the checks' fixed step counts)
  MPI_Comm comm = MPI_COMM_NULL;   // barrier before each iteration; MPI_COMM_NULL: a single process, no barrier
};

struct LoopHooks {
  std::function<void(const Iteration&)> prepare;  // before the barrier, untimed (may be empty)
  std::function<void(const Iteration&)> step;     // the work of one iteration
  // The phase's clock: the step's time in ms, read after it (CUDA events, synchronised). Empty: the protocol times
  // step() with std::chrono::steady_clock (host, OpenMP and MPI work).
  std::function<double(const Iteration&)> elapsed_ms;
  std::function<void(const Iteration&)> check;    // after the step, untimed (may be empty)
};

// Runs the loop; returns this rank's timed samples in ms (empty when plan.steps > 0). The slowest rank per
// iteration is max_across_ranks() of these (common/stats.hpp), taken where the summary row is made.
std::vector<double> run_iterations(const LoopPlan& plan, const LoopHooks& hooks);

}  // namespace ob
