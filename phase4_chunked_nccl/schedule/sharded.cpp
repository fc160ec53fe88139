// The sharded schedule (schedule.hpp; strategies sharded and sharded-ce): every layer's weights are gathered from
// the ranks' slices before the forward reads them. seq gathers them all on the comm stream first; overlap issues
// the gathers at the step's start, each forward layer waiting for its own, at most --prefetch layers ahead of the
// forward (0: no limit), each layer's update of the previous step deferred to right before its gather; comm runs
// the gathers after the buckets. A step thus starts with the update and gathers of the previous step: back to back,
// steps follow one another exactly so (METRICS.md). The compute-only step is the overlapped one without its
// collectives (Schedule::run): the deferred updates, the stream waits and the reductions' absence alike.
//
// Its parts of its own: per forward layer the deferred update (compute stream) and the all-gather (comm stream). Its
// bound from them (METRICS.md, "bound"): per forward layer l, the previous step's update of its slices, then its
// all-gather (one after another in forward order), then its forward, which waits for the gather; the first
// `prefetch` layers (0: all) updated and gathered before the first forward layer, layer l + prefetch just before
// forward layer l; the forward's rest (the loss) after the last layer; then the backward pipeline of
// ob::pipeline_bound_ms() with the per-bucket reductions queued behind the gathers. Nothing follows the last reduction
// (the update is the next step's). Never below T_comp nor T_comm, as ob::schedule_bound_ms(). The planner's model of
// its step is the same forward from the calibrated parts.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#if defined(OVERLAP_HAVE_CUDA)
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/cuda/handles.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#endif

namespace phase4 {
namespace {

constexpr const char* kUpdate = "update";  // its parts' names
constexpr const char* kGather = "gather";
constexpr const char* kPrefetch = "prefetch";  // its knob: --prefetch

// The forward as this schedule runs it: the compute and communication clocks at its end, from 0.
void forward_clocks(const std::vector<double>& layer_ms, const std::vector<double>& update_ms,
                    const std::vector<double>& gather_ms, int prefetch, double rest_ms, double& compute_end,
                    double& comm_end) {
  const std::size_t layers = layer_ms.size();
  if (gather_ms.size() != layers || update_ms.size() != layers || prefetch < 0) {
    throw std::invalid_argument("sharded schedule: one gather and one update per forward layer, and a prefetch >= 0");
  }
  const std::size_t ahead = prefetch > 0 ? std::min<std::size_t>(prefetch, layers) : layers;
  std::vector<double> gathered(layers);
  compute_end = comm_end = 0.0;
  auto prepare = [&](std::size_t l) {  // the update of layer l, then its gather
    compute_end += update_ms[l];
    comm_end = std::max(comm_end, compute_end) + gather_ms[l];
    gathered[l] = comm_end;
  };
  for (std::size_t l = 0; l < ahead; ++l) prepare(l);
  for (std::size_t l = 0; l < layers; ++l) {
    if (l + ahead < layers) prepare(l + ahead);
    compute_end = std::max(compute_end, gathered[l]) + layer_ms[l];
  }
  compute_end += rest_ms;
}

const std::vector<double>& part(const PartTimes& parts, const char* name) {
  const auto found = parts.find(name);
  if (found == parts.end()) throw std::invalid_argument(std::string("sharded schedule: no ") + name + " times");
  return found->second;
}

// The compute-only step is the overlapped one, so its forward holds each layer's deferred update, measured apart
// (and its step-end update is empty).
double bound(const MeasuredParts& p, const SyncSpec& sync) {
  const auto& updates = part(p.part_ms, kUpdate);
  const double rest = std::max(0.0, p.forward_ms - ob::sum_ms(p.layer_ms) - ob::sum_ms(updates));
  double compute_end = 0.0, comm_end = 0.0;
  forward_clocks(p.layer_ms, updates, part(p.part_ms, kGather), sync.knob(kPrefetch), rest, compute_end, comm_end);
  ob::run_pipeline(p.backward_ms, p.bucket_ms, p.ready_after, compute_end, comm_end);
  return ob::step_bound(std::max(compute_end, comm_end), p.t_comp, p.t_comm);
}

void planned_forward(const ScheduleCalibration& s, const SyncSpec& sync, double& compute_end, double& comm_end) {
  forward_clocks(s.layer_ms, part(s.part_ms, kUpdate), part(s.part_ms, kGather), sync.knob(kPrefetch),
                 s.forward_rest_ms, compute_end, comm_end);
}

#if defined(OVERLAP_HAVE_CUDA)
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
  void before_capture(ob::Mode mode, const BucketPlan& /*plan*/) override {
    for (int layer = 1; layer <= r_.spec.model.layers; ++layer) shards_.gather(layer, r_.model.weights(), r_.comm);
    if (mode == ob::Mode::kOverlap || mode == ob::Mode::kCompute)
      shards_.defer_empty_update(r_.update_scale, r_.compute);
  }

 private:
  // Forward layer `layer`'s weights from every rank's slices, on the comm stream.
  void gather(int layer, StepMarks& m) {
    ob::NvtxRange range("gather layer " + std::to_string(layer));
    m.parts.at(kGather).begin[layer - 1] = m.mark(r_.comm);
    shards_.gather(layer, r_.model.weights(), r_.comm);
    m.parts.at(kGather).end[layer - 1] = m.mark(r_.comm);
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
    const int prefetch = r_.spec.sync.knob(kPrefetch);
    const int ahead = prefetch > 0 ? std::min(prefetch, layers) : layers;
    // Layer `layer`'s deferred update follows `previous`, the compute stream's last mark (an update's or a forward
    // layer's end; none: mark one), with nothing between, so that mark begins it; its end mark is the event its
    // gather waits for. One event per update and none per forward layer's start beyond the step's own: each one
    // recorded among the copy engines' waits costs microseconds, and three more per layer made sharded-ce's
    // overlapped step 1-5 % slower (results/2xH100/round3, before-after; 1xH100/round3/sharded-marks: this way back).
    StepMarks::Part& updates = m.parts.at(kUpdate);
    auto prepare = [this, &m, &updates](int layer, int previous) {
      updates.begin[layer - 1] = previous >= 0 ? previous : m.mark(r_.compute);
      shards_.apply_deferred(layer, r_.model.weights(), r_.compute);
      updates.end[layer - 1] = m.mark(r_.compute);
      // Captured (--graph), the marks are graph nodes: the gather waits for an event of its own.
      if (updates.end[layer - 1] >= 0 && !ob::capturing(r_.comm)) {
        CUDA_CHECK(cudaStreamWaitEvent(r_.comm, m.log->event(updates.end[layer - 1]), 0));
      } else {
        hand_over(r_.compute, layer_event(reached_, layer), r_.comm);
      }
      gather(layer, m);
    };
    for (int layer = 1; layer <= ahead; ++layer) prepare(layer, layer > 1 ? updates.end[layer - 2] : -1);
    // Before forward layer `layer`: the next update and gather, then the wait for this layer's gather. The layer
    // begins at the compute stream's last mark: the wait holds no work (none at all in the compute-only step, whose
    // parts the bound replays).
    return [this, &m, &updates, layers, ahead, prepare](int layer) {
      int last = layer > 1 ? m.layer_end[layer - 2] : updates.end[ahead - 1];
      if (layer + ahead <= layers) {
        prepare(layer + ahead, last);
        last = updates.end[layer + ahead - 1];
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

#endif

ScheduleRow row() {
  ScheduleRow row("sharded",
                  "buckets reduce-scattered, each rank updating its slices, the forward gathering the weights", bound,
                  OB_SCHEDULE_FACTORY(made_schedule<ShardedSchedule>));
  row.parts = {{kUpdate, /*comm=*/false, /*rank_share=*/true, ""}, {kGather, /*comm=*/true, false, "allgather"}};
  row.whole_tensors = true;
  row.knobs = {{kPrefetch, 0, 4096, 0,
                "Sharded strategies: all-gathers issued ahead of the forward layer that needs them, in layers (0: "
                "every layer's at the step's start)"}};
  row.forward = planned_forward;
  return row;
}

const RegisterSchedule kSharded(row());

}  // namespace

}  // namespace phase4
