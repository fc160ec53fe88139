// What runs when in one training step (DESIGN.md, "Phase 4 in rooms"). A schedule drives a strategy (sync/): the
// trainer owns the model, the streams and the strategy, times the steps and checks them; the schedule enqueues one
// step of a mode on the compute and comm streams, marking the step's common parts and its own (its row's parts,
// core/schedules.hpp). The strategy's row names its schedule (SyncRow::schedule); each schedule is one file under
// schedule/ holding its class and its row (its parts, its bound, the planner's model of it):
//   all-reduce (all_reduce.cpp): forward, the backward handing each bucket over as it completes, the update after
//                                the last bucket;
//   sharded (sharded.cpp):       the same with the weights gathered from the ranks' slices ahead of the forward and
//                                the update deferred into the next step's forward (its parts: update, gather);
//   carry (carry.cpp):           the all-reduce's with the first forward layers' buckets reduced beside the next
//                                step's forward, first layer first, each layer updated as its buckets arrive (its
//                                part: update).
// In every schedule: seq runs the whole backward, then every bucket on the comm stream, then the update; compute is
// the overlapped step with the strategy's collectives, and only they, left out (its sums, casts, copies, sliced
// updates and stream waits stay: the same work less the communication); comm the buckets' communication alone.
#pragma once

#include <cublas_v2.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/model/model.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"

namespace ob {
class EventLog;
}

namespace phase4 {

// The events of one step, as indices into an EventLog (-1: not recorded). Without `detail` only the step's first and
// last (start, end): the timed steps' marks, since an event inside a step costs it time (results/1xH200/marks-cost);
// their parts are timed on further steps marked in detail (Trainer::run).
struct StepMarks {
  ob::EventLog* log = nullptr;
  bool detail = true;
  int start = -1, forward_end = -1, update_start = -1, end = -1;
  std::vector<int> step_begin, step_end;  // per backward step, compute stream
  std::vector<int> bucket_begin, bucket_end;  // per bucket, comm stream
  std::vector<int> layer_begin, layer_end;  // per forward layer, compute stream (begin: after the work and the
      // waits enqueued before it)
  struct Part {
    std::vector<int> begin, end;  // per forward layer
  };
  std::map<std::string, Part> parts;  // the schedule's own (its row's parts), by name
  // Per bucket, the host clock around the strategy's communicate(): how long enqueuing it held the host thread
  // (a collective that blocks the host delays the compute launched after it). Only with a log, in detail.
  std::vector<ob::SteadyClock::time_point> enqueue_begin, enqueue_end;

  StepMarks() = default;
  StepMarks(ob::EventLog* log, int layers, const BucketPlan& plan, const std::vector<PartSpec>& own,
            bool detail = true);
  bool detailed() const { return log && detail; }
  int mark(cudaStream_t stream);  // a part's event (in detail only)
  int edge(cudaStream_t stream);  // the step's start or end
};

// What a step runs on; the trainer owns it all.
struct StepResources {
  const StepSpec& spec;
  Model& model;
  cudaStream_t compute, comm;
  cudaEvent_t handoff, comm_done;
  float update_scale;  // the learning rate over the ranks (the update averages the summed gradient)
};

class Schedule {
 public:
  Schedule(const StepResources& resources, GradientSync& sync) : r_(resources), sync_(sync) {}
  virtual ~Schedule() = default;
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // One step of `mode` enqueued, its events marked in `marks`; the compute-only step is step(overlap) with the
  // strategy's collectives silenced (collectives.hpp).
  void run(ob::Mode mode, const BucketPlan& plan, StepMarks& marks);
  // The weights as every rank will see them, before they are read outside a step; and forgetting work deferred to
  // the next step when the weights are reset.
  virtual void settle() {}
  virtual void reset() {}
  // Work done eagerly before one step of `mode` is captured into a CUDA graph (--graph): state the step's replays
  // carry from one to the next, and the connections its collectives open on first use.
  virtual void before_capture(ob::Mode mode, const BucketPlan& plan) { (void)mode, (void)plan; }

 protected:
  // One step of `mode`: seq, overlap or comm.
  virtual void step(ob::Mode mode, const BucketPlan& plan, StepMarks& marks) = 0;
  // A training mode's step (seq or overlap): the accumulation micro-steps, then `before_forward()` (work the
  // forward waits for; it returns the hook run before each forward layer), the forward, the backward (overlapped:
  // each bucket handed over as its step completes), seq's buckets after it, and `update_step()` once the last bucket
  // is done; every part marked in `m`.
  void train(ob::Mode mode, const BucketPlan& plan, StepMarks& m,
             const std::function<Model::LayerHook()>& before_forward, const std::function<void()>& update_step);
  // The comm-only step: every bucket synchronised on the comm stream, then `more` (more collectives, or nothing).
  void communicate_only(const BucketPlan& plan, StepMarks& m, const std::function<void()>& more);
  // Micro-steps 1..K-1 of --accum-steps K: forward and backward, gradients accumulating.
  void accumulate();
  // Buckets [from, to) on the comm stream: `whole` synchronised to the end, else the strategy may leave a part to
  // after_step() and finish().
  void communicate(const BucketPlan& plan, std::size_t from, std::size_t to, bool whole, StepMarks& m);
  // Bucket b on the comm stream, marked from `begin` (-1: a mark of its own) to its end: `whole` synchronised to the
  // end, else the strategy may leave a part to after_step() and finish().
  void communicate_bucket(const BucketPlan& plan, std::size_t b, bool whole, int begin, StepMarks& m);
  // The last micro-step's backward: each bucket made ready as its step completes and, overlapped, handed over to
  // the comm stream at once (all but the plan's last carried() ones); then (overlapped) the strategy's deferred
  // parts finished.
  void backward(ob::Mode mode, const BucketPlan& plan, StepMarks& m);
  // The plan's last buckets an overlapped step leaves to the next one (the carry schedule's); none by default.
  virtual std::size_t carried(const BucketPlan& plan) const {
    (void)plan;
    return 0;
  }
  void hand_over(cudaStream_t from, cudaEvent_t event, cudaStream_t to);
  void update() { sync_.update(r_.model.weights(), r_.update_scale, r_.model.elements(), r_.compute); }

  StepResources r_;
  GradientSync& sync_;
};

// The factory of a schedule class constructed from (resources, sync), for its row:
// row.make = OB_SCHEDULE_FACTORY(made_schedule<Mine>).
template <class S>
std::unique_ptr<Schedule> made_schedule(const StepResources& resources, GradientSync& sync) {
  return std::make_unique<S>(resources, sync);
}
// The schedule `name` (the strategy's row says which) driving `sync`; throws std::invalid_argument when unknown.
std::unique_ptr<Schedule> make_schedule(const std::string& name, const StepResources& resources, GradientSync& sync);

}  // namespace phase4
