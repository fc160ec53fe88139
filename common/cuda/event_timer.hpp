// GPU timing with CUDA events recorded on the stream that ran the work. An EventLog keeps every event of a run and
// converts them to milliseconds after one origin event, so per-kernel durations and timeline positions come from
// the same clock. name_stream labels a stream for Nsight (NVTX ranges: common/nvtx.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

namespace ob {

// Whether `stream` is being captured into a CUDA graph (--graph): its work is recorded, not run.
bool capturing(cudaStream_t stream);

class EventLog {
 public:
  EventLog() = default;
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Records a new event on `stream` and returns its index. Events are created once and reused after clear().
  // On a stream being captured into a CUDA graph, the record becomes a node of the graph (each replay records it).
  int record(cudaStream_t stream);
  // Creates events up front, so that no event is created while a stream is being captured.
  void reserve(int count);
  // Forgets recorded events (keeps them allocated). The next record() is the new origin.
  void clear() { used_ = 0; }
  int size() const { return used_; }
  // Waits for the last recorded event.
  void synchronize() const;
  // Milliseconds from event `from` to event `to` (both complete).
  float ms_between(int from, int to) const;
  // Milliseconds from the first event recorded since clear() (the origin) to event `index`.
  float ms_since_origin(int index) const { return ms_between(0, index); }
  cudaEvent_t event(int index) const { return events_.at(index); }

 private:
  std::vector<cudaEvent_t> events_;
  int used_ = 0;
};

// Milliseconds from `from` to `to`, two completed events (of any log).
float ms_between(cudaEvent_t from, cudaEvent_t to);

// Names `stream` in Nsight's timeline ("phase4 compute", "phase4 comm").
void name_stream(cudaStream_t stream, const char* name);

}  // namespace ob
