// The carry schedule (schedule.hpp; strategies nccl-carry, nccl-sym-carry and ce-carry): the all-reduce schedule
// whose last buckets, those holding the first --carry forward layers' gradients (0: half the layers, rounded up), run
// on into the next step's forward, which needs them first: priority-ordered propagation (P3, Jayarajan et al., MLSys
// 2019) planned once. Overlapped, a step
//   1. reduces the previous step's carried buckets on the comm stream in the order the forward needs them (the
//      plan's last bucket first), each whole;
//   2. runs the forward, each carried bucket's weights updated with the previous step's reduced gradient right
//      before the first layer that reads them, once its reduction is done (on the compute stream, which waits there
//      anyway: on the comm stream the updates would hold back the reductions behind them);
//   3. runs the backward, handing the other buckets over as the all-reduce schedule does, and updates their weights
//      once they are reduced.
// Every element is updated once a step with the same reduced gradient as seq (the update is elementwise), so the
// weights are seq's. Replayed from a CUDA graph, one launch ends before the next begins, so the step as captured is
// the steady state: the previous step's tail beside this step's forward. Timed from start to end, a step is the period
// of back-to-back steps (METRICS.md, "carry"). Its first step after the weights were reset (and a captured step's
// first replay) carries a reduced gradient of zeros, which updates nothing; settle() reduces the last step's carried
// buckets and applies their update. seq and comm run as the all-reduce schedule's; the compute-only step is the
// overlapped one with its collectives silenced (Schedule::run): the carried updates and the stream waits stay.
//
// No part of its own: a forward layer's time holds the updates made before it. Its bound (METRICS.md, "bound"): the
// carried buckets back to back on the comm stream from the step's start, last first; per forward layer its forward
// once the bucket holding its last element is reduced (where that bucket is carried); the forward's rest; then the backward pipeline with the other
// buckets queued behind the carried ones, and the update after the last. Never below T_comp nor T_comm, as
// ob::schedule_bound_ms(). The planner's model of it is the same path from the shared compute-only parts (planned()).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"
#if defined(OVERLAP_HAVE_CUDA)
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/handles.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#endif

namespace phase4 {
namespace {

constexpr const char* kDepth = "carry";  // its knob: --carry, the carried depth
constexpr int kMostCarries = 64;  // the planner's search: at most this many depths

// The depths the planner weighs: every depth up to the layers, at most kMostCarries of them spread evenly.
std::vector<int> carry_depths(int layers) {
  std::vector<int> depths;
  for (int k = 1; k <= std::min(layers, kMostCarries); ++k) {
    depths.push_back(static_cast<int>(std::lround(1.0 * k * layers / std::min(layers, kMostCarries))));
  }
  return depths;
}

// The first carried bucket of buckets ready after backward steps `ready_after` (ascending): the first that holds an
// element of the first `carry` forward layers (0: half of them, rounded up), i.e. of backward steps layers - carry on.
std::size_t first_carried(const std::vector<int>& ready_after, int layers, int carry) {
  if (layers < 1 || carry < 0) throw std::invalid_argument("carry schedule: at least one layer and a carry >= 0");
  const int carried_layers = carry > 0 ? std::min(carry, layers) : (layers + 1) / 2;
  const auto first = std::lower_bound(ready_after.begin(), ready_after.end(), layers - carried_layers);
  return static_cast<std::size_t>(first - ready_after.begin());
}

// The step's critical path: the carried buckets [first, end) back to back on the comm stream from 0, last first;
// forward layer l once the bucket holding its last element is reduced (where that bucket is carried), then the
// forward's `rest_ms`; the backward pipeline with the other buckets queued behind the carried ones; then `update_ms`.
double critical_path(const std::vector<double>& layer_ms, double rest_ms, const std::vector<double>& backward_ms,
                     const std::vector<double>& bucket_ms, const std::vector<int>& ready_after, std::size_t first,
                     double update_ms) {
  const int layers = static_cast<int>(layer_ms.size());
  const std::size_t buckets = bucket_ms.size();
  if (ready_after.size() != buckets) throw std::invalid_argument("carry schedule: one ready step per bucket");
  double comm_end = 0.0, compute_end = 0.0;
  std::vector<double> reduced(buckets, 0.0);
  for (std::size_t b = buckets; b-- > first;) reduced[b] = comm_end += bucket_ms[b];
  for (int l = 1; l <= layers; ++l) {  // forward layer l is backward step layers - l
    const auto holding = std::lower_bound(ready_after.begin(), ready_after.end(), layers - l);
    const double ready = holding == ready_after.end() ? 0.0 : reduced[holding - ready_after.begin()];
    compute_end = std::max(compute_end, ready) + layer_ms[l - 1];
  }
  compute_end += rest_ms;
  const std::vector<double> head_ms(bucket_ms.begin(), bucket_ms.begin() + static_cast<std::ptrdiff_t>(first));
  const std::vector<int> head_ready(ready_after.begin(), ready_after.begin() + static_cast<std::ptrdiff_t>(first));
  ob::run_pipeline(backward_ms, head_ms, head_ready, compute_end, comm_end);
  return std::max(compute_end, comm_end) + update_ms;
}

// The compute-only step's layers hold the carried updates made before them; its update, the others'.
double bound(const MeasuredParts& p, const SyncSpec& sync) {
  const int layers = static_cast<int>(p.layer_ms.size());
  const double rest = std::max(0.0, p.forward_ms - ob::sum_ms(p.layer_ms));
  const double path = critical_path(p.layer_ms, rest, p.backward_ms, p.bucket_ms, p.ready_after,
                                    first_carried(p.ready_after, layers, sync.knob(kDepth)), p.update_ms);
  return ob::step_bound(path, p.t_comp, p.t_comm);
}

// The planner's model: the shared forward spread over the layers by their weights, each carried bucket's share of the
// update before the first layer that reads it (the one holding its last element), the others' share after the last
// reduction; the critical path above.
double planned(const PlannedStep& step, const SyncSpec& sync) {
  const GradientLayout& layout = step.layout;
  const int layers = layout.steps();
  const double elements = static_cast<double>(layout.elements());
  const std::vector<int> ready = step.plan.ready_steps();
  const std::size_t first = first_carried(ready, layers, sync.knob(kDepth));
  std::vector<double> layer_ms(layers);
  for (int l = 1; l <= layers; ++l) {
    const int s = layers - l;
    layer_ms[l - 1] = step.forward_ms * static_cast<double>(layout.ends[s] - layout.begin(s)) / elements;
  }
  double carried = 0;
  for (std::size_t b = first; b < step.plan.buckets.size(); ++b) {
    const Bucket& bucket = step.plan.buckets[b];
    const double share = step.update_ms * static_cast<double>(bucket.size()) / elements;
    layer_ms[layers - 1 - layout.ready_step(bucket.end)] += share;
    carried += share;
  }
  return critical_path(layer_ms, 0.0, step.backward_ms, step.bucket_ms, ready, first, step.update_ms - carried);
}

#if defined(OVERLAP_HAVE_CUDA)

class CarrySchedule final : public Schedule {
 public:
  using Schedule::Schedule;

  void step(ob::Mode mode, const BucketPlan& plan, StepMarks& m) override {
    if (mode == ob::Mode::kComm) return communicate_only(plan, m, {});
    if (mode == ob::Mode::kSeq) {
      if (pending_) settle();
      return train(
          mode, plan, m, [] { return Model::LayerHook(); }, [this] { update(); });
    }
    if (!pending_) prime(plan);
    train(
        mode, plan, m, [&] { return carried_before_forward(plan, m); },
        [this] {
          update_range(0, carried_from_, r_.compute);  // the buckets reduced in this backward
          pending_ = true;
        });
  }

  // The last step's carried buckets reduced and their weights updated.
  void settle() override {
    if (!pending_) return;
    pending_ = false;
    hand_over(r_.compute, r_.handoff, r_.comm);
    for (const Bucket& bucket : tail_) sync_.synchronise(bucket, r_.comm);
    hand_over(r_.comm, r_.comm_done, r_.compute);
    for (const Bucket& bucket : tail_) update_range(bucket.begin, bucket.end, r_.compute);
    CUDA_CHECK(cudaStreamSynchronize(r_.compute));
  }

  void reset() override { pending_ = false; }

  // A captured overlapped step carries unconditionally: its first replay carries zeros.
  void before_capture(ob::Mode mode, const BucketPlan& plan) override {
    settle();
    if (mode == ob::Mode::kOverlap || mode == ob::Mode::kCompute) prime(plan);
  }

 protected:
  std::size_t carried(const BucketPlan& plan) const override {
    return plan.buckets.size() - first_carried(plan.ready_steps(), r_.spec.model.layers, r_.spec.sync.knob(kDepth));
  }

 private:
  void update_range(std::uint64_t begin, std::uint64_t end, cudaStream_t stream) {
    if (end > begin) sync_.update_part(r_.model.weights(), r_.update_scale, begin, end - begin, stream);
  }

  // As if a step had just carried a gradient of zeros: the carried buckets' reduction of it in place.
  void prime(const BucketPlan& plan) {
    remember(plan);
    CUDA_CHECK(cudaMemsetAsync(sync_.gradient(), 0, plan.elements * sizeof(float), r_.compute));
    for (const Bucket& bucket : tail_) sync_.bucket_ready(bucket, r_.compute);
    hand_over(r_.compute, r_.handoff, r_.comm);
    for (const Bucket& bucket : tail_) sync_.synchronise(bucket, r_.comm);
    hand_over(r_.comm, r_.comm_done, r_.compute);
    pending_ = true;
  }

  // The carried buckets of `plan` (kept while the plan is the same), and per forward layer the carried buckets first
  // read there (those whose last element is its weights'): a run of them, contiguous in the gradient, reduced back to
  // back, the run's first (in the plan's order) last. One event, one wait and one update per layer, not per bucket:
  // per bucket, the host's calls paced the step (1024,6,4096 in 0.2 MB buckets on one H100: eager steps 20-35 %
  // slower than seq).
  void remember(const BucketPlan& plan) {
    const auto first = plan.buckets.end() - static_cast<std::ptrdiff_t>(carried(plan));
    const auto same = [](const Bucket& a, const Bucket& b) { return a.begin == b.begin && a.end == b.end; };
    if (plan.elements == elements_ && std::equal(first, plan.buckets.end(), tail_.begin(), tail_.end(), same)) return;
    elements_ = plan.elements;
    tail_.assign(first, plan.buckets.end());
    carried_from_ = tail_.empty() ? plan.elements : tail_.front().begin;
    const int layers = r_.spec.model.layers;
    const GradientLayout layout = r_.spec.model.layout();
    due_.assign(layers, {});
    record_.assign(tail_.size(), -1);
    for (std::size_t t = 0; t < tail_.size(); ++t) {
      Due& due = due_[layers - 1 - layout.ready_step(tail_[t].end)];  // forward layer l is backward step layers - l
      due.read = true;
      due.first = std::min(due.first, t);
      due.last = std::max(due.last, t);
    }
    for (int l = 0; l < layers; ++l) {
      if (due_[l].read) record_[due_[l].first] = l;
    }
    while (reduced_.size() < due_.size()) reduced_.push_back(ob::make_sync_event());
  }

  // The carried buckets reduced on the comm stream, the plan's last first; the hook run before each forward layer:
  // the carried buckets first read there waited for and updated (in the layer's time: the compute-only step's layer
  // times hold them, as the bound needs).
  Model::LayerHook carried_before_forward(const BucketPlan& plan, StepMarks& m) {
    remember(plan);
    hand_over(r_.compute, r_.handoff, r_.comm);  // the previous backward wrote the carried gradient
    const std::size_t first = plan.buckets.size() - tail_.size();
    for (std::size_t t = tail_.size(); t-- > 0;) {
      const std::size_t b = first + t;
      communicate_bucket(plan, b, true, t + 1 < tail_.size() && record_[t + 1] < 0 ? m.bucket_end[b + 1] : -1, m);
      if (record_[t] >= 0) CUDA_CHECK(cudaEventRecord(reduced_[record_[t]], r_.comm));
    }
    return [this](int l) {
      const Due& due = due_[l - 1];
      if (!due.read) return;
      CUDA_CHECK(cudaStreamWaitEvent(r_.compute, reduced_[l - 1], 0));
      update_range(tail_[due.first].begin, tail_[due.last].end, r_.compute);
    };
  }

  struct Due {  // a forward layer's carried buckets first read there: tail_[first, last]
    bool read = false;
    std::size_t first = SIZE_MAX, last = 0;
  };
  bool pending_ = false;  // a carried gradient not yet applied
  std::uint64_t elements_ = 0;  // the plan's gradient, with tail_ what remember() was last given
  std::vector<Bucket> tail_;  // the carried buckets
  std::uint64_t carried_from_ = 0;  // their first element: the backward's buckets update [0, carried_from_)
  std::vector<Due> due_;  // per forward layer
  std::vector<int> record_;  // per carried bucket: the forward layer (0-based) whose event follows it, or -1
  std::vector<ob::CudaEvent> reduced_;  // per forward layer: its carried buckets reduced, this step
};
#endif

ScheduleRow row() {
  ScheduleRow row(kCarrySchedule,
                  "the all-reduce schedule with the first forward layers' buckets reduced beside the next forward",
                  bound, OB_SCHEDULE_FACTORY(made_schedule<CarrySchedule>));
  row.planned = planned;
  row.knobs = {{kDepth, 0, 1 << 20, 0,
                "Carrying strategies (*-carry): forward layers whose buckets are reduced beside the next step's "
                "forward, first layer first (0: half the layers, rounded up)",
                carry_depths}};
  return row;
}

const RegisterSchedule kCarry(row());

}  // namespace

}  // namespace phase4
