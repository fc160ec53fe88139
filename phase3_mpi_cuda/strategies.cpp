#include "phase3_mpi_cuda/strategies.hpp"

#include <omp.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <memory>

#include "common/handoff.hpp"
#include "common/iteration.hpp"
#include "common/mpi_check.hpp"
#include "common/watchdog.hpp"
#include "common/verify.hpp"

namespace phase3 {
namespace {

// One step of one mode: runs the tasks and logs each one's duration and timeline event.
class Step {
 public:
  Step(ob::Mode mode, Backend& backend, const Config& config, MPI_Comm comm,
       ob::SteadyClock::time_point origin, int iter, int rank)
      : mode_(mode), lane_prefix_(std::string(ob::mode_name(mode)) + ":"), backend_(backend), config_(config), comm_(comm), origin_(origin), iter_(iter), rank_(rank),
        compute_ms_(config.chunks, 0.0), comm_ms_(config.chunks, 0.0) {}

  void run() {
    if (mode_ == ob::Mode::kComm) {
      for (int k = 0; k < config_.chunks; ++k) allreduce(k);
      return;
    }
    timed("compute", "forward", -1, [&] { backend_.forward(); }, &forward_ms_);
    if (mode_ == ob::Mode::kSeq || mode_ == ob::Mode::kCompute) {
      for (int k = 0; k < config_.chunks; ++k) compute(k);
      if (mode_ == ob::Mode::kSeq) {
        for (int k = 0; k < config_.chunks; ++k) allreduce(k);
      }
    } else if (mode_ == ob::Mode::kThread) {
      threaded();
    } else {
      nonblocking();
    }
    timed("compute", "update", -1, [&] { backend_.update(); }, &update_ms_);
  }

  double forward_ms() const { return forward_ms_; }
  double update_ms() const { return update_ms_; }
  const std::vector<double>& compute_ms() const { return compute_ms_; }
  const std::vector<double>& comm_ms() const { return comm_ms_; }
  std::vector<ob::TimelineEvent>& events() { return events_; }

 private:
  Range rows(int k) const { return chunk_rows(config_.in, k, config_.chunks); }
  float* chunk_data(int k) { return backend_.comm_buffer() + static_cast<std::size_t>(rows(k).begin) * config_.out; }
  int chunk_count(int k) const { return rows(k).size() * config_.out; }

  template <typename F>
  void timed(const char* lane, const char* name, int chunk, F&& work, double* ms) {
    const auto start = ob::SteadyClock::now();
    work();
    const auto end = ob::SteadyClock::now();
    *ms = ob::micros_since(start, end) / 1000.0;
    log(lane, name, chunk, start, end);
  }

  void log(const char* lane, const char* name, int chunk, ob::SteadyClock::time_point start,
           ob::SteadyClock::time_point end) {
    // Called from both sections of the threaded mode: the event list is guarded.
#pragma omp critical(phase3_events)
    events_.push_back({rank_, lane_prefix_ + lane, name, iter_, chunk, ob::micros_since(origin_, start),
                       ob::micros_since(origin_, end)});
  }

  void compute(int k) {
    timed("compute", "dW", k, [&] { backend_.compute_chunk(rows(k)); }, &compute_ms_[k]);
  }

  void allreduce(int k) {
    timed("comm", "allreduce", k, [&] {
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, chunk_data(k), chunk_count(k), MPI_FLOAT, MPI_SUM, comm_));
    }, &comm_ms_[k]);
  }

  void threaded() {
    std::atomic<int> computed{0};
    std::exception_ptr failure[2];  // an exception must not leave an OpenMP region: carried out, rethrown here
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
      try {
        for (int k = 0; k < config_.chunks; ++k) {
          compute(k);
          computed.store(k + 1, std::memory_order_release);
        }
      } catch (...) {
        failure[0] = std::current_exception();
        computed.store(config_.chunks, std::memory_order_release);  // let the comm thread finish its waits
      }
#pragma omp section
      try {
        for (int k = 0; k < config_.chunks; ++k) {
          ob::wait_above(computed, k);
          if (!failure[0]) allreduce(k);
        }
      } catch (...) {
        failure[1] = std::current_exception();
      }
    }
    for (const auto& f : failure) {
      if (f) std::rethrow_exception(f);
    }
  }

  void nonblocking() {
    const int n = config_.chunks;
    std::vector<MPI_Request> requests(n, MPI_REQUEST_NULL);
    std::vector<ob::SteadyClock::time_point> issued(n);
    std::vector<bool> done(n, false);
    auto progress = [&] {
      for (int k = 0; k < n; ++k) {
        if (done[k] || requests[k] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        MPI_CHECK(MPI_Test(&requests[k], &flag, MPI_STATUS_IGNORE));
        if (flag) {
          done[k] = true;
          const auto now = ob::SteadyClock::now();
          comm_ms_[k] = ob::micros_since(issued[k], now) / 1000.0;
          log("comm", "iallreduce", k, issued[k], now);
        }
      }
    };
    for (int k = 0; k < n; ++k) {
      timed("compute", "dW", k, [&] {
        backend_.launch_chunk(rows(k));
        while (!backend_.chunk_ready()) progress();
        backend_.finish_chunk(rows(k));
      }, &compute_ms_[k]);
      issued[k] = ob::SteadyClock::now();
      MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk_data(k), chunk_count(k), MPI_FLOAT, MPI_SUM, comm_, &requests[k]));
      progress();
    }
    while (true) {
      progress();
      bool all = true;
      for (int k = 0; k < n; ++k) all = all && done[k];
      if (all) break;
    }
  }

  ob::Mode mode_;
  std::string lane_prefix_;  // "<mode>:"
  Backend& backend_;
  const Config& config_;
  MPI_Comm comm_;
  ob::SteadyClock::time_point origin_;
  int iter_, rank_;
  double forward_ms_ = 0, update_ms_ = 0;
  std::vector<double> compute_ms_, comm_ms_;
  std::vector<ob::TimelineEvent> events_;
};

}  // namespace

std::uint64_t weights_hash(const std::vector<float>& w) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
  for (std::size_t i = 0; i < w.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

bool same_on_every_rank(std::uint64_t value, MPI_Comm comm) {
  std::uint64_t lo = 0, hi = 0;
  MPI_CHECK(MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, comm));
  MPI_CHECK(MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, comm));
  return lo == hi;
}

std::vector<float> comm_pattern(const Config& config, int rank) {
  std::vector<float> values(static_cast<std::size_t>(config.in) * config.out);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = ob::exact_pattern(config.common.seed + 7919u * (rank + 1), i);
  return values;
}

std::vector<float> comm_pattern_sum(const Config& config, int ranks) {
  std::vector<float> sum(static_cast<std::size_t>(config.in) * config.out, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const auto values = comm_pattern(config, r);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
  }
  return sum;
}

ModeRun run_mode(ob::Mode mode, Backend& backend, const Config& config, MPI_Comm comm,
                 ob::SteadyClock::time_point origin, bool check, int steps) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  ModeRun run;
  run.mode = mode;
  run.chunk_compute_ms.assign(config.chunks, {});
  run.chunk_comm_ms.assign(config.chunks, {});
  const bool is_comm = mode == ob::Mode::kComm;
  const std::vector<float> pattern = is_comm ? comm_pattern(config, rank) : std::vector<float>();
  const std::vector<float> expected = is_comm && check ? comm_pattern_sum(config, ranks) : std::vector<float>();
  std::unique_ptr<Step> step;
  const ob::LoopPlan plan{mode, config.common.warmup, config.common.iters, steps, comm};
  ob::LoopHooks hooks;
  hooks.prepare = [&](const ob::Iteration& it) {
    if (is_comm) backend.write_comm(pattern);
    step = std::make_unique<Step>(mode, backend, config, comm, origin, it.iter, rank);
  };
  hooks.step = [&](const ob::Iteration&) { step->run(); };
  hooks.check = [&](const ob::Iteration& it) {
    if (check && is_comm) {
      auto got = backend.read_comm();
      if (ob::take_injected_corruption() && !got.empty()) got[got.size() / 2] += 1.0f;  // --inject-fault R:S:corrupt
      const auto result = ob::compare_exact(got.data(), expected.data(), got.size());
      if (result.wrong > 0 && run.wrong == 0) run.first_wrong = "iteration " + std::to_string(it.iter) + ", " + result.first;
      run.wrong = std::max(run.wrong, result.wrong);
    } else if (check && mode != ob::Mode::kCompute) {
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
