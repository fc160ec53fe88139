// The progress strategy's helpers (phase 3, `--strategy progress`): the thread that starts and drives each chunk's
// MPI_Iallreduce (ProgressWorker: on a core of its own where the rank has a spare one, else sharing the compute
// thread's), and the compute thread's yield to it on a shared core (YieldCore). Kept apart from the strategies' steps
// (strategies.cpp), which only post jobs to it.
#pragma once

#include <omp.h>
#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "common/nvtx.hpp"

namespace phase3 {

// The compute thread of the progress strategy on a core it shares with the progress thread: SCHED_IDLE for the
// mode's steps, so the progress thread, woken or polling, always runs first (Linux pre-empts a SCHED_IDLE thread at
// once for any other). Only where the thread can return to its policy afterwards: leaving SCHED_IDLE needs root or
// an RLIMIT_NICE that allows nice 0, which a throwaway thread tries first (compute_can_yield).
class YieldCore {
 public:
  explicit YieldCore(bool on) : on_(on) {
    if (!on_) return;
    sched_param idle{};
    on_ = pthread_getschedparam(pthread_self(), &policy_, &param_) == 0 &&
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) == 0;
  }
  ~YieldCore() {
    if (on_) pthread_setschedparam(pthread_self(), policy_, &param_);
  }
  YieldCore(const YieldCore&) = delete;
  YieldCore& operator=(const YieldCore&) = delete;

 private:
  bool on_;
  int policy_ = SCHED_OTHER;
  sched_param param_{};
};

// The progress strategy's second thread. It lives as long as the mode's run and sleeps on a condition variable
// between jobs. At its start it takes a core of its own where the rank has one spare (and then keeps the compute
// team's threads off it), and a timer slack of 1 ns, so the back-off sleeps last what they say.
class ProgressWorker {
 public:
  // `own_core`: take one; `slot`: which, counted from the end of the affinity mask (the rank's index on its node,
  // so ranks that share one mask, as under mpirun --bind-to none, take different cores).
  ProgressWorker(bool own_core, int slot, int compute_threads) : compute_threads_(compute_threads) {
    thread_ = std::thread([this, own_core, slot] { loop(own_core, slot); });
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return placed_; });
    if (own_core_) keep_team_off(true);
  }
  ~ProgressWorker() {
    if (own_core_) keep_team_off(false);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ProgressWorker(const ProgressWorker&) = delete;
  ProgressWorker& operator=(const ProgressWorker&) = delete;

  bool own_core() const { return own_core_; }

  void start(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = std::move(job);
      ++posted_;
    }
    cv_.notify_all();
  }
  // Waits for the job; rethrows what it threw.
  void finish() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_ == posted_; });
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

  // Sleeps 1 us, doubling up to `max_us`, on each call after a call that moved nothing; `moved` resets it.
  static void back_off(double& sleep_us, bool moved, double max_us) {
    if (moved || max_us <= 0) {
      sleep_us = 0;
      return;
    }
    sleep_us = std::min(sleep_us == 0 ? 1.0 : 2 * sleep_us, max_us);
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(sleep_us));
  }

 private:
  void loop(bool own_core, int slot) {
    ob::nvtx_name_thread("phase3 progress");
    place(own_core, slot);
    std::unique_lock<std::mutex> lock(mutex_);
    placed_ = true;
    cv_.notify_all();
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || posted_ > done_; });
      if (stop_) return;
      lock.unlock();
      try {
        job_();
      } catch (...) {
        failure_ = std::current_exception();
      }
      lock.lock();
      ++done_;
      cv_.notify_all();
    }
  }

  void place(bool own_core, int slot) {
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    if (own_core && sched_getaffinity(0, sizeof(mask_), &mask_) == 0) {
      CPU_ZERO(&own_);
      const int count = CPU_COUNT(&mask_);
      for (int cpu = CPU_SETSIZE - 1, seen = 0; cpu >= 0; --cpu) {
        if (CPU_ISSET(cpu, &mask_) && seen++ == slot % count) {
          CPU_SET(cpu, &own_);
          break;
        }
      }
      own_core_ = sched_setaffinity(0, sizeof(own_), &own_) == 0;
    }
#else
    (void)own_core, (void)slot;
#endif
  }

  // The OpenMP team that computes (its threads are kept between regions) runs on the rank's other cores while this
  // thread holds its own, and on all of them again afterwards.
  void keep_team_off(bool off) {
#ifdef __linux__
    cpu_set_t team = mask_;
    if (off) CPU_XOR(&team, &mask_, &own_);
#pragma omp parallel num_threads(compute_threads_)
    sched_setaffinity(0, sizeof(team), &team);
#else
    (void)off;
#endif
  }

  int compute_threads_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool placed_ = false, stop_ = false;
  int posted_ = 0, done_ = 0;
  std::function<void()> job_;
  std::exception_ptr failure_;
  bool own_core_ = false;
#ifdef __linux__
  cpu_set_t mask_{}, own_{};
#endif
};

}  // namespace phase3
