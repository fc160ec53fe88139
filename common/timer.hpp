// Host-side clock for host, OpenMP and MPI work: std::chrono::steady_clock. GPU work is timed with CUDA events
// instead (common/cuda/event_timer.hpp). Times are reported in the unit their name carries.
#pragma once

#include <chrono>

namespace ob {

using SteadyClock = std::chrono::steady_clock;

// Microseconds from `origin` to `t`.
inline double micros_since(SteadyClock::time_point origin, SteadyClock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - origin).count();
}

class SteadyTimer {
 public:
  SteadyTimer() : start_(SteadyClock::now()) {}
  void reset() { start_ = SteadyClock::now(); }
  double elapsed_ms() const { return std::chrono::duration<double, std::milli>(SteadyClock::now() - start_).count(); }

 private:
  SteadyClock::time_point start_;
};

}  // namespace ob
