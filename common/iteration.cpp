#include "common/iteration.hpp"

#include "common/mpi_check.hpp"
#include "common/timer.hpp"
#include "common/watchdog.hpp"

namespace ob {

std::vector<double> run_iterations(const LoopPlan& plan, const LoopHooks& hooks) {
  const bool timing = plan.steps <= 0;
  const int warmup = timing ? plan.warmup : 0;
  const int total = timing ? plan.warmup + plan.iters : plan.steps;
  std::vector<double> samples;
  samples.reserve(timing ? plan.iters : 0);
  for (int i = 0; i < total; ++i) {
    const Iteration it{i, i - warmup, timing && i >= warmup};
    if (hooks.prepare) hooks.prepare(it);
    if (plan.comm != MPI_COMM_NULL) MPI_CHECK(MPI_Barrier(plan.comm));  // every iteration starts together
    step_started(iteration_name(mode_name(plan.mode), i, warmup));   // a fault injected here stops this rank
    const SteadyTimer timer;
    hooks.step(it);
    const double host_ms = timer.elapsed_ms();
    const double ms = hooks.elapsed_ms ? hooks.elapsed_ms(it) : host_ms;
    if (hooks.check) hooks.check(it);
    if (it.timed) samples.push_back(ms);
  }
  return samples;
}

}  // namespace ob
