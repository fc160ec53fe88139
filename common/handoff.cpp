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

}  // namespace ob
