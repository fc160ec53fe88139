// The sharded schedule (schedule.hpp; strategies sharded and sharded-ce): every layer's weights are gathered from
// the ranks' slices before the forward reads them. seq gathers them all on the comm stream first; overlap issues
// the gathers at the step's start, each forward layer waiting for its own, at most --prefetch layers ahead of the
// forward (0: no limit), each layer's update of the previous step deferred to right before its gather; comm runs
// the gathers after the buckets. A step thus starts with the update and gathers of the previous step: back to back,
// steps follow one another exactly so (METRICS.md). The compute-only step is the overlapped one without its
// collectives (Schedule::run): the deferred updates, the stream waits and the reductions' absence alike.
#include <algorithm>
#include <stdexcept>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/cuda/handles.hpp"
#include "common/metrics.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#include "phase4_chunked_nccl/schedule/sharded_bound.hpp"

namespace phase4 {
namespace {

ShardedSync& sharded(GradientSync& sync) {
  auto* strategy = dynamic_cast<ShardedSync*>(&sync);
  if (!strategy) throw std::logic_error("the sharded schedule drives ShardedSync strategies only");
  return *strategy;
}

class ShardedSchedule final : public Schedule {
 public:
  ShardedSchedule(const StepResources& resources, GradientSync& sync)
      : Schedule(resources, sync), shards_(sharded(sync)) {}

  void step(ob::Mode mode, const BucketPlan& plan, StepMarks& m) override {
    if (mode == ob::Mode::kComm) {
      return communicate_only(plan, m, [&] {
        for (int layer = 1; layer <= r_.spec.model.layers; ++layer) gather(layer, m);
      });
    }
    train(
        mode, plan, m, [&] { return gathers_before_forward(mode, m); },
        [&] {
          if (mode == ob::Mode::kOverlap) {
            shards_.defer_update(r_.update_scale);  // into the next step's forward
          } else {
            update();
          }
        });
  }

  // Updates and gathers inside the forward (sharded_bound.hpp): the compute-only step is the overlapped one, so its
  // forward holds each layer's deferred update, measured apart (and its step-end update is empty).
  double bound(const MeasuredParts& p) const override {
    ShardedStep step;
    step.layer_ms = p.layer_ms;
    step.gather_ms = p.gather_ms;
    step.update_ms = p.layer_update_ms;
    step.prefetch = r_.spec.sync.prefetch;
    step.forward_rest_ms = std::max(0.0, p.forward_ms - ob::sum_ms(p.layer_ms) - ob::sum_ms(p.layer_update_ms));
    step.backward_ms = p.backward_ms;
    step.bucket_ms = p.bucket_ms;
    step.ready_after = p.ready_after;
    return sharded_bound_ms(step, p.t_comp, p.t_comm);
  }

  void settle() override {
    const int layers = r_.spec.model.layers;
    for (int layer = 1; layer <= layers; ++layer) shards_.apply_deferred(layer, r_.model.weights(), r_.compute);
    CUDA_CHECK(cudaStreamSynchronize(r_.compute));
    for (int layer = 1; layer <= layers; ++layer) shards_.gather(layer, r_.model.weights(), r_.comm);
    CUDA_CHECK(cudaStreamSynchronize(r_.comm));
  }

  void reset() override { shards_.drop_deferred(); }

  // The gathers' connections opened (gathering the ranks' equal weights changes no bit), and an overlapped step's
  // deferred update made unconditional: each replay applies the previous one's, the first an update of nothing.
  void before_capture(ob::Mode mode) override {
    for (int layer = 1; layer <= r_.spec.model.layers; ++layer) shards_.gather(layer, r_.model.weights(), r_.comm);
    if (mode == ob::Mode::kOverlap || mode == ob::Mode::kCompute)
      shards_.defer_empty_update(r_.update_scale, r_.compute);
  }

 private:
  // Forward layer `layer`'s weights from every rank's slices, on the comm stream.
  void gather(int layer, StepMarks& m) {
    ob::NvtxRange range("gather layer " + std::to_string(layer));
    m.gather_begin[layer - 1] = m.mark(r_.comm);
    shards_.gather(layer, r_.model.weights(), r_.comm);
    m.gather_end[layer - 1] = m.mark(r_.comm);
    CUDA_CHECK(cudaEventRecord(layer_event(gathered_, layer), r_.comm));
  }

  // The gathers the forward waits for, issued before it (seq: all, the forward after the last) or ahead of it
  // (overlap: `ahead` layers updated and gathered first, one more as each layer starts); the hook run before each
  // forward layer.
  Model::LayerHook gathers_before_forward(ob::Mode mode, StepMarks& m) {
    const int layers = r_.spec.model.layers;
    hand_over(r_.compute, r_.handoff, r_.comm);  // the previous update is done
    if (mode == ob::Mode::kSeq) {
      for (int layer = 1; layer <= layers; ++layer) gather(layer, m);
      hand_over(r_.comm, r_.comm_done, r_.compute);
      return {};
    }
    const int ahead = r_.spec.sync.prefetch > 0 ? std::min(r_.spec.sync.prefetch, layers) : layers;
    // Layer `layer`'s deferred update follows `previous`, the compute stream's last mark (an update's or a forward
    // layer's end; none: mark one), with nothing between, so that mark begins it; its end mark is the event its
    // gather waits for. One event per update and none per forward layer's start beyond the step's own: each one
    // recorded among the copy engines' waits costs microseconds, and three more per layer made sharded-ce's
    // overlapped step 1-5 % slower (results/2xH100/round3, before-after; 1xH100/round3/sharded-marks: this way back).
    auto prepare = [this, &m](int layer, int previous) {
      m.update_begin[layer - 1] = previous >= 0 ? previous : m.mark(r_.compute);
      shards_.apply_deferred(layer, r_.model.weights(), r_.compute);
      m.update_end[layer - 1] = m.mark(r_.compute);
      // Captured (--graph), the marks are graph nodes: the gather waits for an event of its own.
      if (m.update_end[layer - 1] >= 0 && !ob::capturing(r_.comm)) {
        CUDA_CHECK(cudaStreamWaitEvent(r_.comm, m.log->event(m.update_end[layer - 1]), 0));
      } else {
        hand_over(r_.compute, layer_event(reached_, layer), r_.comm);
      }
      gather(layer, m);
    };
    for (int layer = 1; layer <= ahead; ++layer) prepare(layer, layer > 1 ? m.update_end[layer - 2] : -1);
    // Before forward layer `layer`: the next update and gather, then the wait for this layer's gather. The layer
    // begins at the compute stream's last mark: the wait holds no work (none at all in the compute-only step, whose
    // parts the bound replays).
    return [this, &m, layers, ahead, prepare](int layer) {
      int last = layer > 1 ? m.layer_end[layer - 2] : m.update_end[ahead - 1];
      if (layer + ahead <= layers) {
        prepare(layer + ahead, last);
        last = m.update_end[layer + ahead - 1];
      }
      CUDA_CHECK(cudaStreamWaitEvent(r_.compute, layer_event(gathered_, layer), 0));
      m.layer_begin[layer - 1] = last;
    };
  }

  cudaEvent_t layer_event(std::vector<ob::CudaEvent>& events, int layer) {  // made on first use
    while (static_cast<int>(events.size()) < layer) events.push_back(ob::make_sync_event());
    return events[layer - 1];
  }

  ShardedSync& shards_;
  std::vector<ob::CudaEvent> gathered_, reached_;  // per forward layer: its gather done; the forward reached it
};

const RegisterSchedule kSharded(kShardedSchedule, made_schedule<ShardedSchedule>);

}  // namespace

}  // namespace phase4
