// The all-reduce schedule (schedule.hpp): forward; the backward, each bucket handed to the comm stream as the step
// completing it ends (overlap) or all of them after the backward (seq); the update once the last bucket is done.
#include "common/metrics.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"

namespace phase4 {
namespace {

class AllReduceSchedule final : public Schedule {
 public:
  using Schedule::Schedule;

  void step(ob::Mode mode, const BucketPlan& plan, StepMarks& m) override {
    const std::size_t buckets = plan.buckets.size();
    if (mode == ob::Mode::kComm) {
      m.start = m.mark(r_.comm);
      communicate(plan, 0, buckets, true, m);
      m.end = m.mark(r_.comm);
      return;
    }
    m.start = m.mark(r_.compute);
    accumulate();
    r_.model.forward(r_.config.accum_steps - 1, r_.compute, {},
                     [&](int layer) { m.layer_end[layer - 1] = m.mark(r_.compute); });
    m.forward_end = m.mark(r_.compute);
    backward(mode, plan, m);
    if (mode == ob::Mode::kSeq) {
      hand_over(r_.compute, r_.handoff, r_.comm);
      communicate(plan, 0, buckets, true, m);
    }
    if (mode != ob::Mode::kCompute) hand_over(r_.comm, r_.comm_done, r_.compute);
    m.update_start = m.mark(r_.compute);
    ob::NvtxRange range("update");
    update();
    m.end = m.mark(r_.compute);
  }

  // The forward, the backward pipeline of the steps and the buckets, the update after the last bucket.
  double bound(const MeasuredParts& p) const override {
    return ob::schedule_bound_ms(p.forward_ms, p.backward_ms, p.bucket_ms, p.ready_after, p.update_ms, p.t_comp,
                                 p.t_comm);
  }
};

}  // namespace

std::unique_ptr<Schedule> make_all_reduce_schedule(const StepResources& resources, GradientSync& sync) {
  return std::make_unique<AllReduceSchedule>(resources, sync);
}

}  // namespace phase4
