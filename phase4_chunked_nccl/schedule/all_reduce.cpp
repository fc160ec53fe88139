// The all-reduce schedule (schedule.hpp): forward; the backward, each bucket handed to the comm stream as the step
// completing it ends (overlap) or all of them after the backward (seq); the update once the last bucket is done. No
// part of its own: its bound and the planner's model are the step's common parts.
#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"
#if defined(OVERLAP_HAVE_CUDA)
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#endif

namespace phase4 {
namespace {

#if defined(OVERLAP_HAVE_CUDA)
class AllReduceSchedule final : public Schedule {
 public:
  using Schedule::Schedule;

  void step(ob::Mode mode, const BucketPlan& plan, StepMarks& m) override {
    if (mode == ob::Mode::kComm) return communicate_only(plan, m, {});
    train(
        mode, plan, m, [] { return Model::LayerHook(); }, [this] { update(); });
  }
};
#endif

// The forward, the backward pipeline of the steps and the buckets, the update after the last bucket.
double bound(const MeasuredParts& p, const SyncSpec& /*sync*/) {
  return ob::schedule_bound_ms(p.forward_ms, p.backward_ms, p.bucket_ms, p.ready_after, p.update_ms, p.t_comp,
                               p.t_comm);
}

ScheduleRow row() {
  return {kAllReduceSchedule, "buckets all-reduced as the backward completes them, the update after the last", bound,
          OB_SCHEDULE_FACTORY(made_schedule<AllReduceSchedule>)};
}

const RegisterSchedule kAllReduce(row());

}  // namespace

}  // namespace phase4
