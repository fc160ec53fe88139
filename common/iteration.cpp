#include "common/iteration.hpp"

#include <algorithm>
#include <cmath>

#include "common/mpi_check.hpp"
#include "common/options.hpp"
#include "common/stats.hpp"
#include "common/timer.hpp"
#include "common/watchdog.hpp"

namespace ob {

LoopPlan loop_plan(Mode mode, const CommonOptions& common, MPI_Comm comm, int steps) {
  return {mode, common.warmup, common.iters, steps, comm, common.min_time_ms};
}

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

int most_timed_iters(int iters, double min_time_ms) {
  return min_time_ms > 0 ? std::max(iters, kMostMinTimeIters) : iters;
}

int timed_iters(const LoopPlan& plan, const std::vector<double>& ms) {
  if (plan.min_time_ms <= 0 || ms.empty()) return plan.iters;
  const auto window = ms.end() - std::min<std::ptrdiff_t>(kSteadyWindow, static_cast<std::ptrdiff_t>(ms.size()));
  const double step_ms = std::max(percentile(std::vector<double>(window, ms.end()), 50), 1e-6);
  const double wanted = std::ceil(plan.min_time_ms / step_ms);
  return static_cast<int>(std::clamp<double>(wanted, plan.iters, most_timed_iters(plan.iters, plan.min_time_ms)));
}

namespace {
// Every rank's verdict on warm-up joined: go on while any rank is not steady (the loop's barriers need equal counts).
bool all_steady(bool steady, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return steady;
  int local = steady ? 1 : 0, all = 0;
  MPI_CHECK(MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, comm));
  return all == 1;
}

// The largest of every rank's count (the loop's barriers need equal counts).
int largest(int count, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return count;
  int most = 0;
  MPI_CHECK(MPI_Allreduce(&count, &most, 1, MPI_INT, MPI_MAX, comm));
  return most;
}
}  // namespace

std::vector<double> run_iterations(const LoopPlan& plan, const LoopHooks& hooks) {
  const bool timing = plan.steps <= 0;
  std::vector<double> samples, warmup_ms;
  int warmup = timing ? plan.warmup : 0;  // grows while warm-up is not steady, up to max_warmup(plan)
  int timed = timing ? plan.iters : 0;  // set by timed_iters() once warm-up is over
  const int cap = max_warmup(plan);
  for (int i = 0; i < (timing ? warmup + timed : plan.steps); ++i) {
    const Iteration it{i, i - warmup, timing && i >= warmup, i == (timing ? warmup + timed : plan.steps) - 1};
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
    if (timing && i == warmup - 1) {
      if (warmup < cap && !all_steady(warmup_is_steady(warmup_ms), plan.comm)) {
        ++warmup;
      } else if (plan.min_time_ms > 0) {
        timed = largest(timed_iters(plan, warmup_ms), plan.comm);
      }
    }
  }
  return samples;
}

}  // namespace ob
