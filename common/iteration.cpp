#include "common/iteration.hpp"

#include <algorithm>
#include <cmath>

#include "common/mpi_check.hpp"
#include "common/stats.hpp"
#include "common/timer.hpp"
#include "common/watchdog.hpp"

namespace ob {

int max_warmup(const LoopPlan& plan) {
  if (plan.steps > 0 || plan.warmup <= 0) return 0;
  return 4 * std::max(plan.warmup, 2 * kSteadyWindow);
}

bool warmup_is_steady(const std::vector<double>& ms) {
  if (ms.size() < 2 * static_cast<std::size_t>(kSteadyWindow)) return false;
  const auto last = ms.end() - kSteadyWindow;
  const double recent = percentile(std::vector<double>(last, ms.end()), 50);
  const double before = percentile(std::vector<double>(last - kSteadyWindow, last), 50);
  return std::fabs(recent - before) <= kSteadyTolerance * recent;
}

namespace {
// Every rank's verdict on warm-up joined: go on while any rank is not steady (the loop's barriers need equal counts).
bool all_steady(bool steady, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return steady;
  int local = steady ? 1 : 0, all = 0;
  MPI_CHECK(MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, comm));
  return all == 1;
}
}  // namespace

std::vector<double> run_iterations(const LoopPlan& plan, const LoopHooks& hooks) {
  const bool timing = plan.steps <= 0;
  std::vector<double> samples, warmup_ms;
  samples.reserve(timing ? plan.iters : 0);
  int warmup = timing ? plan.warmup : 0;  // grows while warm-up is not steady, up to max_warmup(plan)
  const int cap = max_warmup(plan);
  for (int i = 0; i < (timing ? warmup + plan.iters : plan.steps); ++i) {
    const Iteration it{i, i - warmup, timing && i >= warmup};
    if (hooks.prepare) hooks.prepare(it);
    if (plan.comm != MPI_COMM_NULL) MPI_CHECK(MPI_Barrier(plan.comm));  // every iteration starts together
    step_started(iteration_name(mode_name(plan.mode), i, warmup));  // a fault injected here stops this rank
    const SteadyTimer timer;
    hooks.step(it);
    const double host_ms = timer.elapsed_ms();
    const double ms = hooks.elapsed_ms ? hooks.elapsed_ms(it) : host_ms;
    if (!it.timed && timing) warmup_ms.push_back(timer.elapsed_ms());  // across the step and its synchronisation
    if (hooks.check) hooks.check(it);
    if (it.timed) samples.push_back(ms);
    if (timing && i == warmup - 1 && warmup < cap && !all_steady(warmup_is_steady(warmup_ms), plan.comm)) ++warmup;
  }
  return samples;
}

}  // namespace ob
