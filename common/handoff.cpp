#include "common/handoff.hpp"

#include <chrono>
#include <thread>

namespace ob {

void wait_above(const std::atomic<int>& counter, int value) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  while (counter.load(std::memory_order_acquire) <= value) {
    if (std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

void TeamBarrier::arrive_and_wait() {
  const int generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == parties_ - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.store(generation + 1, std::memory_order_release);
  } else {
    wait_above(generation_, generation);
  }
}

}  // namespace ob
