#include "phase3_mpi_cuda/strategies.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "common/handoff.hpp"
#include "common/iteration.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/nvtx.hpp"
#include "common/watchdog.hpp"
#include "common/verify.hpp"
#include "phase3_mpi_cuda/progress_worker.hpp"

namespace phase3 {
namespace {

// One step of one mode: runs the tasks and logs each one's duration and timeline event.
class Step {
 public:
  Step(ob::Mode mode, Backend& backend, const Config& config, MPI_Comm comm, ob::SteadyClock::time_point origin,
       int iter, int rank, ProgressWorker* progress)
      : progress_(progress), mode_(mode), lane_prefix_(std::string(ob::mode_name(mode)) + ":"), backend_(backend),
        config_(config), comm_(comm), origin_(origin), iter_(iter), rank_(rank), compute_ms_(config.chunks, 0.0),
        comm_ms_(config.chunks, 0.0), requests_(config.chunks, MPI_REQUEST_NULL), issued_(config.chunks),
        done_(config.chunks, false) {}

  void run() {
    if (mode_ == ob::Mode::kComm) {
      for (int k = 0; k < config_.chunks; ++k) allreduce(k);
      return;
    }
    timed(
        "compute", "forward", -1, [&] { backend_.forward(); }, &forward_ms_);
    if (mode_ == ob::Mode::kSeq) {
      produce({}, [](int) {});
      for (int k = 0; k < config_.chunks; ++k) {
        allreduce(k);
        backend_.return_chunk(k, rows(k));
      }
    } else if (mode_ == kThread) {
      beside_compute([&](const std::atomic<int>& computed, const std::atomic<bool>& failed) {
        for (int k = 0; k < config_.chunks; ++k) {
          ob::wait_above(computed, k);
          if (failed.load()) return;
          allreduce(k);
          backend_.return_chunk(k, rows(k));
        }
      });
    } else if (mode_ == kNonblocking) {
      produce([&] { test_all(); },
              [&](int k) {
                issue(k);
                test_all();
              });
      while (completed_ < config_.chunks) test_all();
    } else if (mode_ == kProgress) {
      with_progress_worker();
    } else {  // compute
      produce({}, [](int) {});
    }
    timed(
        "compute", "update", -1, [&] { backend_.update(); }, &update_ms_);
  }

  double forward_ms() const { return forward_ms_; }
  double update_ms() const { return update_ms_; }
  const std::vector<double>& compute_ms() const { return compute_ms_; }
  const std::vector<double>& comm_ms() const { return comm_ms_; }
  std::vector<ob::TimelineEvent>& events() { return events_; }

 private:
  Range rows(int k) const { return chunk_rows(config_.in, k, config_.chunks); }
  std::string nvtx_name(const char* what, int chunk) const {
    return lane_prefix_ + " " + what + (chunk >= 0 ? " chunk " + std::to_string(chunk) : std::string());
  }
  float* chunk_data(int k) { return backend_.comm_buffer() + static_cast<std::size_t>(rows(k).begin) * config_.out; }
  int chunk_count(int k) const { return rows(k).size() * config_.out; }

  template <typename F>
  void timed(const char* lane, const char* name, int chunk, F&& work, double* ms) {
    ob::NvtxRange range(nvtx_name(name, chunk));
    const auto start = ob::SteadyClock::now();
    work();
    const auto end = ob::SteadyClock::now();
    *ms = ob::micros_since(start, end) / 1000.0;
    log(lane, name, chunk, start, end);
  }

  // Called from both threads of the thread and progress strategies: the event list is guarded.
  void log(const char* lane, const char* name, int chunk, ob::SteadyClock::time_point start,
           ob::SteadyClock::time_point end) {
    std::lock_guard<std::mutex> lock(events_mutex_);
    events_.push_back({rank_, lane_prefix_ + lane, name, iter_, chunk, ob::micros_since(origin_, start),
                       ob::micros_since(origin_, end)});
  }

  // Computes every chunk in order (a backend that queues gets them all launched first, so its GEMMs run back to
  // back), logs each one from when it could start to when it is in the buffer, and calls ready(k) then. `idle` runs
  // while a chunk is awaited (see Backend::wait_chunk).
  void produce(const std::function<void()>& idle, const std::function<void(int)>& ready) {
    const bool queued = backend_.queues_chunks();
    auto since = ob::SteadyClock::now();
    for (int k = 0; queued && k < config_.chunks; ++k) backend_.launch_chunk(k, rows(k));
    for (int k = 0; k < config_.chunks; ++k) {
      {
        ob::NvtxRange range(nvtx_name("dW", k));
        if (!queued) {
          since = ob::SteadyClock::now();
          backend_.launch_chunk(k, rows(k));
        }
        backend_.wait_chunk(k, idle);
      }
      const auto now = ob::SteadyClock::now();
      compute_ms_[k] = ob::micros_since(since, now) / 1000.0;
      log("compute", "dW", k, since, now);
      since = now;
      ready(k);
    }
  }

  void allreduce(int k) {
    timed(
        "comm", "allreduce", k,
        [&] { MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, chunk_data(k), chunk_count(k), MPI_FLOAT, MPI_SUM, comm_)); },
        &comm_ms_[k]);
  }

  void issue(int k) {
    ob::NvtxRange range(nvtx_name("MPI_Iallreduce", k));
    issued_[k] = ob::SteadyClock::now();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk_data(k), chunk_count(k), MPI_FLOAT, MPI_SUM, comm_, &requests_[k]));
  }

  // MPI_Test on every all-reduce in flight (which is what drives them); a finished chunk goes back to the backend.
  // True when one finished.
  bool test_all() {
    bool finished = false;
    for (int k = 0; k < config_.chunks; ++k) {
      if (done_[k] || requests_[k] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_CHECK(MPI_Test(&requests_[k], &flag, MPI_STATUS_IGNORE));
      if (!flag) continue;
      const auto now = ob::SteadyClock::now();
      done_[k] = finished = true;
      ++completed_;
      comm_ms_[k] = ob::micros_since(issued_[k], now) / 1000.0;
      log("comm", "iallreduce", k, issued_[k], now);
      backend_.return_chunk(k, rows(k));
    }
    return finished;
  }

  // The progress strategy: this thread computes; the worker, the only thread that calls MPI meanwhile, starts each
  // chunk's MPI_Iallreduce as soon as it is computed and tests every one in flight. It polls without pause while
  // anything is in flight where it runs first (a core of its own, or a compute thread that yields the shared core),
  // else it backs off; with nothing in flight it sleeps until the next chunk is published.
  void with_progress_worker() {
    std::atomic<int> computed{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::condition_variable published;
    const bool yields = !progress_->own_core() && compute_can_yield();
    progress_->start([&] {
      int issued = 0;
      double sleep_us = 0;
      while (completed_ < config_.chunks && !failed.load()) {
        if (issued == completed_) {
          std::unique_lock<std::mutex> lock(mutex);
          published.wait(lock, [&] { return failed.load() || computed.load(std::memory_order_acquire) > issued; });
        }
        bool moved = false;
        for (const int ready = computed.load(std::memory_order_acquire); issued < ready; ++issued, moved = true) {
          issue(issued);
        }
        moved = test_all() || moved;
        ProgressWorker::back_off(sleep_us, moved || progress_->own_core() || yields, config_.backoff_us);
      }
    });
    const auto publish = [&](const std::function<void()>& change) {  // under the lock, so no wake-up is lost
      {
        std::lock_guard<std::mutex> lock(mutex);
        change();
      }
      published.notify_one();
    };
    try {
      YieldCore yield(yields);
      produce({}, [&](int k) { publish([&] { computed.store(k + 1, std::memory_order_release); }); });
    } catch (...) {
      publish([&] { failed.store(true); });
      progress_->finish();
      throw;
    }
    progress_->finish();
  }

  // Computes on one OpenMP thread (with its nested team) while `comm` runs on a second; chunk k is published by
  // storing k + 1 in `computed`. An exception must not leave an OpenMP region: it is carried out and rethrown here.
  void beside_compute(const std::function<void(const std::atomic<int>&, const std::atomic<bool>&)>& comm) {
    std::atomic<int> computed{0};
    std::atomic<bool> failed{false};
    std::exception_ptr failure[2];
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
      try {
        produce({}, [&](int k) { computed.store(k + 1, std::memory_order_release); });
      } catch (...) {
        failure[0] = std::current_exception();
        failed.store(true);
        computed.store(config_.chunks, std::memory_order_release);  // let the other thread finish its waits
      }
#pragma omp section
      try {
        ob::nvtx_name_thread("phase3 comm thread");
        comm(computed, failed);
      } catch (...) {
        failure[1] = std::current_exception();
      }
    }
    for (const auto& f : failure) {
      if (f) std::rethrow_exception(f);
    }
  }

  ProgressWorker* progress_;  // the progress strategy's
  ob::Mode mode_;
  std::string lane_prefix_;  // "<mode>:"
  Backend& backend_;
  const Config& config_;
  MPI_Comm comm_;
  ob::SteadyClock::time_point origin_;
  int iter_, rank_;
  double forward_ms_ = 0, update_ms_ = 0;
  std::vector<double> compute_ms_, comm_ms_;
  std::vector<MPI_Request> requests_;  // non-blocking strategies: each chunk's all-reduce
  std::vector<ob::SteadyClock::time_point> issued_;
  std::vector<bool> done_;
  int completed_ = 0;
  std::mutex events_mutex_;
  std::vector<ob::TimelineEvent> events_;
};

}  // namespace

ModeRun run_mode(ob::Mode mode, Backend& backend, const Config& config, MPI_Comm comm,
                 ob::SteadyClock::time_point origin, bool check, int steps) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  ModeRun run;
  run.mode = mode;
  run.chunk_compute_ms.assign(config.chunks, {});
  run.chunk_comm_ms.assign(config.chunks, {});
  // The comm-only mode, and every mode of a backend that computes nothing, all-reduce the exact pattern.
  const bool exact = (mode == ob::Mode::kComm || !backend.trains()) && mode != ob::Mode::kCompute;
  const std::vector<float> pattern = exact ? comm_pattern(config, rank) : std::vector<float>();
  const std::vector<float> expected = exact && check ? comm_pattern_sum(config, ranks) : std::vector<float>();
  std::unique_ptr<Step> step;
  std::unique_ptr<ProgressWorker> progress;
  if (mode == kProgress) {
    progress = std::make_unique<ProgressWorker>(config.compute_threads() < rank_cores(), ob::local_rank(comm),
                                                config.compute_threads());
  }
  backend.run_back_to_back(mode == kProgress);
  const ob::LoopPlan plan = ob::loop_plan(mode, config.common, comm, steps);
  ob::LoopHooks hooks;
  hooks.prepare = [&](const ob::Iteration& it) {
    if (exact) backend.write_comm(pattern);
    step = std::make_unique<Step>(mode, backend, config, comm, origin, it.iter, rank, progress.get());
  };
  hooks.step = [&](const ob::Iteration&) { step->run(); };
  hooks.check = [&](const ob::Iteration& it) {
    if (check && exact) {
      auto got = backend.read_comm();
      if (ob::take_injected_corruption() && !got.empty()) got[got.size() / 2] += 1.0f;  // --inject-fault R:S:corrupt
      const auto result = ob::compare_exact(got.data(), expected.data(), got.size());
      if (result.wrong > 0 && run.wrong == 0)
        run.first_wrong = "iteration " + std::to_string(it.iter) + ", " + result.first;
      run.wrong = std::max(run.wrong, result.wrong);
    } else if (check && mode != ob::Mode::kCompute && backend.trains()) {
      run.ranks_agree = same_on_every_rank(weights_hash(backend.weights()), comm) && run.ranks_agree;
    }
    if (!it.timed) return;
    double compute_total = step->forward_ms() + step->update_ms();
    for (int k = 0; k < config.chunks; ++k) {
      run.chunk_compute_ms[k].push_back(step->compute_ms()[k]);
      run.chunk_comm_ms[k].push_back(step->comm_ms()[k]);
      compute_total += step->compute_ms()[k];
    }
    run.compute_total_ms.push_back(compute_total);
    run.forward_ms.push_back(step->forward_ms());
    run.update_ms.push_back(step->update_ms());
    auto& events = step->events();
    run.events.insert(run.events.end(), events.begin(), events.end());
  };
  run.iter_ms = ob::run_iterations(plan, hooks);
  return run;
}

}  // namespace phase3
