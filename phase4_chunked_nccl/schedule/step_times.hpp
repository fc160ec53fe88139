// A step's marks as times, and a mode's steps marked in detail as its per-part times and timeline (Trainer::run).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/cuda/event_timer.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

namespace phase4 {

// The same step in milliseconds since the mode's origin event (NaN: a part not marked).
struct StepTimes {
  double start = 0, forward_end = 0, update_start = 0, end = 0;
  std::vector<double> step_begin, step_end, bucket_begin, bucket_end, layer_begin, layer_end;
  struct Part {
    std::vector<double> begin, end;  // per forward layer
  };
  std::map<std::string, Part> parts;  // the schedule's own, by name
  std::vector<double> enqueue_begin, enqueue_end;  // host clock, ms on the same origin (eager only)
};

// `m`'s events, each at `at(index)` ms from the origin.
StepTimes resolve(const StepMarks& m, const std::function<double(int)>& at);

// An eager step's times: its marks (in `log`, whose first event is the origin), and the host's enqueue times per
// communicated bucket on the same origin (`origin_ms` after `origin` on the host clock).
StepTimes eager_times(const StepMarks& marks, const ob::EventLog& log, ob::SteadyClock::time_point origin,
                      double origin_ms);

// A mode's steps marked in detail as per-part times and timeline events (from the run's origin, `origin_ms` on the host
// clock): forward, layers, backward steps and update on the compute lane, buckets on the comm lane, the schedule's own
// parts (`own`) on the lane of their stream where they have an op, enqueue times on the host lane.
void collect(const std::vector<StepTimes>& marked, double origin_ms, int rank, int layers, const char* bucket_op,
             const std::vector<PartSpec>& own, ModeRun& run);

}  // namespace phase4
