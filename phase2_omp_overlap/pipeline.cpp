#include "phase2_omp_overlap/pipeline.hpp"

#include "common/handoff.hpp"
#include "common/iteration.hpp"
#include "common/nvtx.hpp"
#include "common/options.hpp"

#include <omp.h>

#include <algorithm>
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

  // Chunk `chunk`'s communication on the calling thread, logged.
  void communicate(int chunk, TaskLog& log) {
    timed(false, chunk, log, [&] { workload_.communicate(iter_, chunk); });
  }

  // One iteration of `mode` (seq, overlap, compute) in one OpenMP parallel region: a compute team of `team` threads
  // shares every chunk's GEMM (its thread 0 logs the chunk from its start to the team's barrier), and in the
  // overlapped mode one more thread communicates chunk k as soon as the team has published it. seq: the team's thread
  // 0 communicates each chunk while the others wait. The team lives for the whole iteration: no nested team per chunk.
  // Throws ob::UsageError when OpenMP grants the overlapped mode fewer than 2 threads (OMP_DYNAMIC under load,
  // OMP_THREAD_LIMIT): one thread would run both sides one after the other, the first waiting for the second forever.
  void run(ob::Mode mode, int chunks, int team, TaskLog& compute_log, TaskLog& comm_log) {
    const bool overlap = mode == ob::Mode::kOverlap;
    std::atomic<int> computed{0}, communicated{0};
    ob::TeamBarrier barrier(team);
    int granted = team + overlap;
#pragma omp parallel num_threads(team + (overlap ? 1 : 0))
    {
#pragma omp single
      {
        granted = omp_get_num_threads();  // the implicit barrier publishes it and the team's size
        barrier.set_parties(std::max(1, granted - (overlap ? 1 : 0)));
      }
      const int members = std::max(1, granted - (overlap ? 1 : 0));
      const int id = omp_get_thread_num();
      if (overlap && granted < 2) {
        // refused below
      } else if (overlap && id == members) {
        for (int k = 0; k < chunks; ++k) {
          ob::wait_above(computed, k);
          communicate(k, comm_log);
          communicated.store(k + 1, std::memory_order_release);
        }
      } else {
        for (int k = 0; k < chunks; ++k) {
          auto share = [&] {
            workload_.compute(iter_, k, id, members);
            barrier.arrive_and_wait();
          };
          if (id == 0) {
            timed(true, k, compute_log, share);
          } else {
            share();
          }
          if (id == 0 && overlap) computed.store(k + 1, std::memory_order_release);
          if (mode == ob::Mode::kSeq) {
            if (id == 0) communicate(k, compute_log);
            barrier.arrive_and_wait();
          }
        }
        if (id == 0 && overlap) ob::wait_above(communicated, chunks - 1);
      }
    }
    ob::require(!overlap || granted >= 2, "OMP_DYNAMIC", std::to_string(granted) + " thread(s) granted",
                "the overlapped mode needs 2 OpenMP threads at once; set OMP_DYNAMIC=false or free a core");
  }

 private:
  template <typename Task>
  void timed(bool compute, int chunk, TaskLog& log, Task&& work) {
    const std::string thread = "thread " + std::to_string(omp_get_thread_num());
    ob::nvtx_name_thread("phase2 " + thread);
    ob::NvtxRange range(mode_ + (compute ? ": compute chunk " : ": comm chunk ") + std::to_string(chunk));
    const auto start = ob::SteadyClock::now();
    work();
    const auto end = ob::SteadyClock::now();
    (compute ? log.compute_ms : log.comm_ms).push_back(ob::micros_since(start, end) / 1000.0);
    log.events.push_back({0, mode_ + ":" + thread, compute ? "compute" : "comm", iter_, chunk,
                          ob::micros_since(origin_, start), ob::micros_since(origin_, end)});
  }

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
  const ob::LoopPlan plan = ob::loop_plan(mode, config.common);  // one process: no barrier
  ob::LoopHooks hooks;
  hooks.prepare = [&](const ob::Iteration&) {
    if (mode == ob::Mode::kComm) workload.prepare_comm_only();
    compute_log = {};
    comm_log = {};
  };
  hooks.step = [&](const ob::Iteration& it) {
    Iteration iteration(mode, workload, origin, it.iter);
    if (mode == ob::Mode::kComm) {
      for (int k = 0; k < chunks; ++k) iteration.communicate(k, compute_log);
    } else {
      iteration.run(mode, chunks, workload.team(), compute_log, comm_log);
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
    if ((check && it.timed) || it.last) {
      const auto result = workload.check(ob::mode_name(mode));
      if (result.wrong > 0 && run.wrong == 0)
        run.first_wrong = "iteration " + std::to_string(it.iter) + ", " + result.first;
      run.wrong = std::max(run.wrong, result.wrong);
    }
  };
  run.iter_ms = ob::run_iterations(plan, hooks);
  return run;
}

}  // namespace phase2
