#include "phase2_omp_overlap/pipeline.hpp"

#include "common/handoff.hpp"
#include "common/iteration.hpp"
#include "common/nvtx.hpp"
#include "common/options.hpp"

#include <omp.h>

#include <atomic>
#include <numeric>
#include <string>

namespace phase2 {
namespace {

struct TaskLog {
  std::vector<ob::TimelineEvent> events;
  std::vector<double> compute_ms, comm_ms;
};

class Iteration {
 public:
  Iteration(ob::Mode mode, Workload& workload, ob::SteadyClock::time_point origin, int iter)
      : mode_(ob::mode_name(mode)), workload_(workload), origin_(origin), iter_(iter) {}

  void task(bool compute, int chunk, TaskLog& log) {
    const std::string thread = "thread " + std::to_string(omp_get_thread_num());
    ob::nvtx_name_thread("phase2 " + thread);
    ob::NvtxRange range(mode_ + (compute ? ": compute chunk " : ": comm chunk ") + std::to_string(chunk));
    const auto start = ob::SteadyClock::now();
    if (compute) {
      workload_.compute(iter_, chunk);
    } else {
      workload_.communicate(iter_, chunk);
    }
    const auto end = ob::SteadyClock::now();
    const double us = ob::micros_since(start, end);
    (compute ? log.compute_ms : log.comm_ms).push_back(us / 1000.0);
    log.events.push_back({0, mode_ + ":" + thread, compute ? "compute" : "comm",
                          iter_, chunk, ob::micros_since(origin_, start), ob::micros_since(origin_, end)});
  }

  // Throws ob::UsageError when OpenMP grants fewer than the 2 threads the two sections need (OMP_DYNAMIC under load,
  // OMP_THREAD_LIMIT): one thread would run them one after the other, the first waiting for the second for ever.
  void overlapped(int chunks, TaskLog& compute_log, TaskLog& comm_log) {
    std::atomic<int> computed{0}, communicated{0};
    int granted = 2;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      granted = omp_get_num_threads();  // the implicit barrier publishes it before the sections
      if (granted == 2) {
#pragma omp sections
        {
#pragma omp section
          {
            for (int k = 0; k < chunks; ++k) {
              task(true, k, compute_log);
              computed.store(k + 1, std::memory_order_release);
            }
            ob::wait_above(communicated, chunks - 1);
          }
#pragma omp section
          {
            for (int k = 0; k < chunks; ++k) {
              ob::wait_above(computed, k);
              task(false, k, comm_log);
              communicated.store(k + 1, std::memory_order_release);
            }
          }
        }
      }
    }
    ob::require(granted == 2, "OMP_DYNAMIC", std::to_string(granted) + " thread(s) granted",
                "the overlapped mode needs 2 OpenMP threads at once; set OMP_DYNAMIC=false or free a core");
  }

 private:
  std::string mode_;
  Workload& workload_;
  ob::SteadyClock::time_point origin_;
  int iter_;
};

}  // namespace

ModeRun run_mode(ob::Mode mode, Workload& workload, const Config& config, ob::SteadyClock::time_point origin,
                 bool check) {
  ModeRun run;
  run.mode = mode;
  const int chunks = config.chunks;
  TaskLog compute_log, comm_log;
  const ob::LoopPlan plan{mode, config.common.warmup, config.common.iters};  // one process: no barrier
  ob::LoopHooks hooks;
  hooks.prepare = [&](const ob::Iteration&) {
    if (mode == ob::Mode::kComm) workload.prepare_comm_only();
    compute_log = {};
    comm_log = {};
  };
  hooks.step = [&](const ob::Iteration& it) {
    Iteration iteration(mode, workload, origin, it.iter);
    if (mode == ob::Mode::kOverlap) {
      iteration.overlapped(chunks, compute_log, comm_log);
    } else {
      for (int k = 0; k < chunks; ++k) {
        if (mode != ob::Mode::kComm) iteration.task(true, k, compute_log);
        if (mode != ob::Mode::kCompute) iteration.task(false, k, compute_log);
      }
    }
  };
  hooks.check = [&](const ob::Iteration& it) {
    if (it.timed) {
      run.compute_total_ms.push_back(
          std::accumulate(compute_log.compute_ms.begin(), compute_log.compute_ms.end(), 0.0));
      for (TaskLog* log : {&compute_log, &comm_log}) {
        run.compute_task_ms.insert(run.compute_task_ms.end(), log->compute_ms.begin(), log->compute_ms.end());
        run.comm_task_ms.insert(run.comm_task_ms.end(), log->comm_ms.begin(), log->comm_ms.end());
        run.events.insert(run.events.end(), log->events.begin(), log->events.end());
      }
    }
    if ((check && it.timed) || it.iter == config.common.iters - 1) {
      const auto result = workload.check(ob::mode_name(mode));
      if (result.wrong > 0 && run.wrong == 0) run.first_wrong = "iteration " + std::to_string(it.iter) + ", " + result.first;
      run.wrong = std::max(run.wrong, result.wrong);
    }
  };
  run.iter_ms = ob::run_iterations(plan, hooks);
  return run;
}

}  // namespace phase2
