// The all-reduce schedule (schedule.hpp): forward; the backward, each bucket handed to the comm stream as the step
// completing it ends (overlap) or all of them after the backward (seq); the update once the last bucket is done.
#include "common/metrics.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"

namespace phase4 {
namespace {

class AllReduceSchedule final : public Schedule {
 public:
  using Schedule::Schedule;

  void step(ob::Mode mode, const BucketPlan& plan, StepMarks& m) override {
    if (mode == ob::Mode::kComm) return communicate_only(plan, m, {});
    train(
        mode, plan, m, [] { return Model::LayerHook(); }, [this] { update(); });
  }

  // The forward, the backward pipeline of the steps and the buckets, the update after the last bucket.
  double bound(const MeasuredParts& p) const override {
    return ob::schedule_bound_ms(p.forward_ms, p.backward_ms, p.bucket_ms, p.ready_after, p.update_ms, p.t_comp,
                                 p.t_comm);
  }
};

const RegisterSchedule kAllReduce(kAllReduceSchedule, made_schedule<AllReduceSchedule>);

}  // namespace

}  // namespace phase4
