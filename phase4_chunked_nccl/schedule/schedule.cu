#include "phase4_chunked_nccl/schedule/schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/nvtx.hpp"

namespace phase4 {

std::unique_ptr<Schedule> make_schedule(const std::string& name, const StepResources& resources, GradientSync& sync) {
  const ScheduleRow& row = schedule_row(name);
  if (!row.make) throw std::invalid_argument("schedule '" + name + "' has no factory in this build");
  return row.make(resources, sync);
}

StepMarks::StepMarks(ob::EventLog* event_log, int layers, const BucketPlan& plan, const std::vector<PartSpec>& own,
                     bool in_detail)
    : log(event_log), detail(in_detail), step_begin(layers, -1), step_end(layers, -1),
      bucket_begin(plan.buckets.size(), -1), bucket_end(plan.buckets.size(), -1), layer_begin(layers, -1),
      layer_end(layers, -1) {
  for (const auto& part : own) parts[part.name] = {std::vector<int>(layers, -1), std::vector<int>(layers, -1)};
  if (detailed()) {
    enqueue_begin.resize(plan.buckets.size());
    enqueue_end.resize(plan.buckets.size());
  }
}

int StepMarks::mark(cudaStream_t stream) { return detailed() ? log->record(stream) : -1; }

int StepMarks::edge(cudaStream_t stream) { return log ? log->record(stream) : -1; }

void Schedule::run(ob::Mode mode, const BucketPlan& plan, StepMarks& marks) {
  if (mode != ob::Mode::kCompute) return step(mode, plan, marks);
  const Collectives::Silence silence(sync_.collectives());
  step(ob::Mode::kOverlap, plan, marks);
}

void Schedule::train(ob::Mode mode, const BucketPlan& plan, StepMarks& m,
                     const std::function<Model::LayerHook()>& before_forward,
                     const std::function<void()>& update_step) {
  m.start = m.edge(r_.compute);
  accumulate();
  const Model::LayerHook before = before_forward();
  const auto begin = [&](int layer) {  // with no work of its own between two layers, one event ends and begins them
    if (before) before(layer);  // it may name the layer's begin itself
    int& begun = m.layer_begin[layer - 1];
    if (begun < 0) begun = layer == 1 ? m.mark(r_.compute) : m.layer_end[layer - 2];
  };
  r_.model.forward(r_.spec.model.accum_steps - 1, r_.compute, begin,
                   [&](int layer) { m.layer_end[layer - 1] = m.mark(r_.compute); });
  m.forward_end = m.mark(r_.compute);
  backward(mode, plan, m);
  if (mode == ob::Mode::kSeq) {
    hand_over(r_.compute, r_.handoff, r_.comm);
    communicate(plan, 0, plan.buckets.size(), true, m);
  }
  hand_over(r_.comm, r_.comm_done, r_.compute);
  m.update_start = m.mark(r_.compute);
  ob::NvtxRange range("update");
  update_step();
  m.end = m.edge(r_.compute);
}

void Schedule::communicate_only(const BucketPlan& plan, StepMarks& m, const std::function<void()>& more) {
  m.start = m.edge(r_.comm);
  communicate(plan, 0, plan.buckets.size(), true, m);
  if (more) more();
  m.end = m.edge(r_.comm);
}

void Schedule::accumulate() {
  for (int k = 0; k + 1 < r_.spec.model.accum_steps; ++k) {
    r_.model.forward(k, r_.compute);
    for (int s = 0; s < r_.spec.model.layers; ++s) r_.model.backward_step(s, k > 0, r_.compute);
  }
}

void Schedule::hand_over(cudaStream_t from, cudaEvent_t event, cudaStream_t to) {
  CUDA_CHECK(cudaEventRecord(event, from));
  CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
}

// Whole buckets follow one another on the comm stream with nothing between them, so one event ends a bucket and
// begins the next: an event recorded between two collectives holds the second back by ~2.5 us (nccl-sym's 4 MiB
// buckets: 125 GB/s with two, 135 with one).
void Schedule::communicate(const BucketPlan& plan, std::size_t from, std::size_t to, bool whole, StepMarks& m) {
  for (std::size_t b = from; b < to; ++b)
    communicate_bucket(plan, b, whole, whole && b > from ? m.bucket_end[b - 1] : -1, m);
}

void Schedule::communicate_bucket(const BucketPlan& plan, std::size_t b, bool whole, int begin, StepMarks& m) {
  ob::NvtxRange range("bucket " + std::to_string(b) + " " + r_.spec.sync.strategy);
  m.bucket_begin[b] = begin >= 0 ? begin : m.mark(r_.comm);
  if (m.detailed()) m.enqueue_begin[b] = ob::SteadyClock::now();
  if (whole) {
    sync_.synchronise(plan.buckets[b], r_.comm);
  } else {
    sync_.communicate(plan.buckets[b], r_.comm);
  }
  if (m.detailed()) m.enqueue_end[b] = ob::SteadyClock::now();
  m.bucket_end[b] = m.mark(r_.comm);
}

void Schedule::backward(ob::Mode mode, const BucketPlan& plan, StepMarks& m) {
  const auto& buckets = plan.buckets;
  const bool overlap = mode == ob::Mode::kOverlap;
  const std::size_t handed = overlap ? buckets.size() - std::min(carried(plan), buckets.size()) : 0;
  std::size_t next = 0;
  for (int s = 0; s < r_.spec.model.layers; ++s) {
    m.step_begin[s] = s == 0 ? m.forward_end : m.step_end[s - 1];
    r_.model.backward_step(s, r_.spec.model.accum_steps > 1, r_.compute);
    const std::size_t ready = next;
    for (; next < buckets.size() && buckets[next].ready_after == s; ++next) {
      sync_.bucket_ready(buckets[next], r_.compute);  // part of making the gradient, in every mode
    }
    m.step_end[s] = m.mark(r_.compute);
    if (!overlap) continue;
    if (ready < std::min(next, handed)) {
      hand_over(r_.compute, r_.handoff, r_.comm);
      communicate(plan, ready, std::min(next, handed), false, m);
    }
    sync_.after_step(s, r_.compute, r_.comm);
  }
  if (overlap) sync_.finish(r_.compute, r_.comm);
}

}  // namespace phase4
