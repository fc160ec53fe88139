#include "common/cuda/event_timer.hpp"

#include "common/cuda/cuda_check.hpp"

namespace ob {

EventLog::~EventLog() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

int EventLog::record(cudaStream_t stream) {
  if (used_ == static_cast<int>(events_.size())) {
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreate(&event));
    events_.push_back(event);
  }
  CUDA_CHECK(cudaEventRecord(events_[used_], stream));
  return used_++;
}

void EventLog::synchronize() const {
  if (used_ > 0) CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
}

float EventLog::ms_between(int from, int to) const {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
  return ms;
}

}  // namespace ob
