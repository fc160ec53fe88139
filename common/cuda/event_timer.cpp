#include "common/cuda/event_timer.hpp"

#include <nvtx3/nvToolsExtCudaRt.h>

#include "common/cuda/cuda_check.hpp"

namespace ob {

EventLog::~EventLog() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

void EventLog::reserve(int count) {
  while (static_cast<int>(events_.size()) < count) {
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreate(&event));
    events_.push_back(event);
  }
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture == cudaStreamCaptureStatusActive;
}

int EventLog::record(cudaStream_t stream) {
  reserve(used_ + 1);
  if (capturing(stream)) {
    CUDA_CHECK(cudaEventRecordWithFlags(events_[used_], stream, cudaEventRecordExternal));
  } else {
    CUDA_CHECK(cudaEventRecord(events_[used_], stream));
  }
  return used_++;
}

void EventLog::synchronize() const {
  if (used_ > 0) CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
}

float EventLog::ms_between(int from, int to) const { return ob::ms_between(events_.at(from), events_.at(to)); }

float ms_between(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

void name_stream(cudaStream_t stream, const char* name) { nvtxNameCudaStreamA(stream, name); }

}  // namespace ob
