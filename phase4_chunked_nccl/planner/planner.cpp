#include "phase4_chunked_nccl/planner/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <unistd.h>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/metadata.hpp"
#include "common/metrics.hpp"
#include "common/options.hpp"
#include "phase4_chunked_nccl/planner/rank_rise.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {
namespace {

constexpr double kBytesPerElement = sizeof(float);  // plans and calibrations count fp32 gradient bytes

// The segment [k, k + 1] of ascending `xs` holding x (the first or last one outside).
std::size_t segment(const std::vector<double>& xs, double x) {
  std::size_t k = 0;
  while (k + 2 < xs.size() && x > xs[k + 1]) ++k;
  return k;
}

// Linear in log2(x), clamped to the calibrated range.
double log_linear(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (xs.size() == 1 || x <= xs.front()) return ys.front();
  if (x >= xs.back()) return ys.back();
  const std::size_t k = segment(xs, x);
  const double t = std::log2(x / xs[k]) / std::log2(xs[k + 1] / xs[k]);
  return ys[k] + (ys[k + 1] - ys[k]) * t;
}

double bucket_bytes(const Bucket& bucket) { return bucket.size() * kBytesPerElement; }

// The most pieces the programme cuts a gradient into: its work grows with their square.
constexpr std::size_t kMostPieces = 512;

// The pieces' end elements: every backward step's gradient cut into `pieces` equal parts; a model of more steps than
// kMostPieces (a transformer of hundreds of blocks) has its boundaries on every k-th step's end instead, k the
// fewest that keeps the pieces within kMostPieces (the last step's end always one of them).
std::vector<std::uint64_t> piece_ends(const GradientLayout& layout, int pieces) {
  std::vector<std::uint64_t> ends;
  for (int s = 0; s < layout.steps(); ++s) {
    const std::uint64_t begin = layout.begin(s), size = layout.ends[s] - begin;
    for (int p = 1; p <= pieces; ++p) {
      const std::uint64_t end = begin + size * p / pieces;
      if (ends.empty() || end > ends.back()) ends.push_back(end);
    }
  }
  if (ends.size() <= kMostPieces) return ends;
  const std::size_t every = (ends.size() + kMostPieces - 2) / (kMostPieces - 1);  // the last end may be one more
  std::vector<std::uint64_t> kept;
  for (std::size_t i = every - 1; i < ends.size(); i += every) kept.push_back(ends[i]);
  if (kept.back() != ends.back()) kept.push_back(ends.back());
  return kept;
}

// The iteration's time outside its measured tasks (launch gaps, events), added after the pipeline: a prediction of
// where it falls (the schedule bound, a lower bound, leaves it to its T_comp term).
double overhead_ms(double iteration_ms, double tasks_ms) { return std::max(0.0, iteration_ms - tasks_ms); }

struct StepModel {
  const Calibration& calibration;
  const StrategyCalibration& strategy;
  const Target& target;
  GradientLayout layout = calibration.layout();
  const ScheduleRow& schedule = schedule_of(strategy.sync);
  const ScheduleCalibration& own = strategy.schedule;  // empty: the schedule has no part of its own
  // The backward steps' compute-only times, the compute and communication clocks when the backward starts, and
  // what follows the pipeline's end (all-reduce: the update; both: the iteration's overhead).
  std::vector<double> steps = own.empty() ? calibration.step_ms : own.step_ms;
  double compute_start = 0, comm_start = 0, tail_ms = 0;

  // Measured / predicted overlapped step of the calibration's plan of each size (empty: no correction).
  std::vector<double> residual;

  StepModel(const Calibration& c, const StrategyCalibration& s, const Target& t, bool corrected = true)
      : calibration(c), strategy(s), target(t) {
    start();
    if (corrected) residual = residuals();
  }
  void start() {
    const Calibration& c = calibration;
    const double backward = ob::sum_ms(steps);
    if (own.empty() || !schedule.forward) {
      compute_start = c.forward_ms;
      tail_ms = c.update_ms + overhead_ms(c.iteration_ms, c.forward_ms + backward + c.update_ms);
      return;
    }
    // The schedule's forward as calibrated, under overlap on the target: the layers slowed as measured, each comm
    // part stretched and scaled to the target per layer, a compute part on the rank's slice by its share.
    ScheduleCalibration scaled = own;
    const double share = target.ranks > 0 ? update_rise(strategy.sync, c.ranks, target.ranks) : 1.0;
    double tasks = ob::sum_ms(own.layer_ms) + own.forward_rest_ms + backward;
    for (double& ms : scaled.layer_ms) ms *= 1 + own.forward_slowdown;
    for (const auto& part : schedule.parts) {
      auto& times = scaled.part_ms.at(part.name);
      if (!part.comm) tasks += ob::sum_ms(times);
      for (std::size_t l = 0; l < times.size(); ++l) {
        times[l] *= part.comm ? own.stretch.at(part.name) * comm_scale(l) : part.rank_share ? share : 1.0;
      }
    }
    SyncSpec sync;
    sync.strategy = strategy.sync;
    sync.knobs = strategy.knobs;
    schedule.forward(scaled, sync, compute_start, comm_start);
    tail_ms = overhead_ms(own.iteration_ms, tasks);
  }
  std::vector<double> residuals() const;  // below predict_with, which it runs
  // A plan as the strategy runs it: whole tensors where its schedule's buckets hold them.
  BucketPlan as_run(const BucketPlan& plan) const {
    return schedule.whole_tensors ? align_plan_to_steps(plan, layout) : plan;
  }
  // A comm part of forward layer l on the target: as the reductions' time at that layer's size scales (1
  // calibrated), or on other rank counts, for collectives made of one copy per peer (SyncRow::gathers_by_copies: on
  // the calibrated node's links, copy engines needing peer access), as copies_rise says.
  double comm_scale(std::size_t l) const {
    if (!target.comm) return 1.0;
    const int step = layout.steps() - 1 - static_cast<int>(l);  // forward layer l is backward step L - 1 - l
    const double bytes = (layout.ends[step] - layout.begin(step)) * kBytesPerElement;
    const SyncRow* row = find_sync(strategy.sync);
    if (row && row->gathers_by_copies && target.ranks > 0 && target.ranks != calibration.ranks &&
        calibration.ranks >= 2) {
      return copies_rise(strategy, bytes, calibration.ranks, target.ranks);
    }
    const double calibrated = strategy.comm_ms_at(bytes);
    return calibrated > 0 ? target.comm(bytes) / calibrated : 1.0;
  }
  double isolated_ms(double bytes) const { return target.comm ? target.comm(bytes) : strategy.comm_ms_at(bytes); }
  // A bucket's time in the overlapped step: its isolated time, and what the compute beside it added on the
  // calibrated link (stretch - 1 times the calibrated time). The stretch is measured on the comm stream, which is
  // the pipeline's throughput; a strategy whose buckets end on other streams (ce: the sum on the compute stream, the
  // all-gather on its own) has a stretch below 1 there, but nothing follows the last bucket to hide its later
  // stages behind: that one takes at least its isolated time. On a slower link (a CommTime) the GEMMs' cost to the
  // collective's kernels stays what it was, not a share of the longer time: on 2 x H100 over host memory (25 MB
  // buckets of 4096,16,512) the stretch scaled with the link's time put the step about a quarter above the
  // measured one, this within a few per cent (results/2xH100/round3/slow-links).
  double bucket_ms(double bytes, bool last) const {
    const double stretch = strategy.stretch_at(bytes);
    return isolated_ms(bytes) + ((last ? std::max(1.0, stretch) : stretch) - 1) * strategy.comm_ms_at(bytes) +
        strategy.gap_ms_at(bytes);
  }
  // Pieces per backward step for the programme: 1 where the schedule's buckets hold whole tensors.
  int pieces() const { return schedule.whole_tensors ? 1 : pieces_per_layer(layout.steps()); }
};

// The plan of least predicted step for a fixed backward slowdown: f[j], the least finish time of the bucket ending
// at piece j, is min over i < j of max(f[i], ready(j)) + bucket(i, j); any plan's later buckets only depend on that
// finish time, and monotonically, so the minimum composes. Among plans of equal finish (a compute-bound step: the
// last bucket decides), the one whose buckets slow the backward least (their isolated time times the slowdown of
// their size, summed) is kept: an additive tie-break, which composes too.
BucketPlan best_for_slowdown(const StepModel& model, double slowdown) {
  const GradientLayout& layout = model.layout;
  const auto ends = piece_ends(layout, model.pieces());
  std::vector<double> ready(model.steps.size());  // compute clock at the end of each backward step
  double clock = model.compute_start;
  for (std::size_t s = 0; s < ready.size(); ++s) ready[s] = clock += model.steps[s] * (1 + slowdown);
  const std::size_t n = ends.size();
  std::vector<double> finish(n + 1, std::numeric_limits<double>::infinity()), slowing(n + 1, 0);
  std::vector<std::size_t> from(n + 1, 0);
  finish[0] = model.comm_start;
  auto end_of = [&](std::size_t j) { return j == 0 ? std::uint64_t{0} : ends[j - 1]; };
  for (std::size_t j = 1; j <= n; ++j) {
    const double ready_j = ready[static_cast<std::size_t>(layout.ready_step(end_of(j)))];
    for (std::size_t i = 0; i < j; ++i) {
      const double bytes = (end_of(j) - end_of(i)) * kBytesPerElement;
      const double t = std::max(finish[i], ready_j) + model.bucket_ms(bytes, j == n);
      const double slows = slowing[i] + model.isolated_ms(bytes) * model.strategy.slowdown_at(bytes);
      const double tie = 1e-9 * std::max(1.0, t);
      if (t < finish[j] - tie || (t <= finish[j] + tie && slows < slowing[j])) {
        finish[j] = std::min(finish[j], t), slowing[j] = slows, from[j] = i;
      }
    }
  }
  std::vector<std::uint64_t> chosen;
  for (std::size_t j = n; j > 0; j = from[j]) chosen.push_back(end_of(j));
  std::reverse(chosen.begin(), chosen.end());
  return plan_from_ends(layout, chosen);
}

Prediction predict_with(const StepModel& model, const BucketPlan& plan) {
  Prediction prediction;
  double weighted = 0, total = 0;
  std::vector<double> comm_ms;
  const std::vector<int> ready = plan.ready_steps();
  const double low = model.strategy.bytes.front(), high = model.strategy.bytes.back();
  for (const Bucket& bucket : plan.buckets) {
    const double bytes = bucket_bytes(bucket);
    const double isolated = model.isolated_ms(bytes);
    weighted += isolated * model.strategy.slowdown_at(bytes);
    total += isolated;
    comm_ms.push_back(model.bucket_ms(bytes, &bucket == &plan.buckets.back()));
    prediction.extrapolated = prediction.extrapolated || bytes < low * (1 - 1e-9) || bytes > high * (1 + 1e-9);
  }
  prediction.slowdown = total > 0 ? weighted / total : 0;
  std::vector<double> steps = model.steps;
  for (double& s : steps) s *= 1 + prediction.slowdown;
  if (model.schedule.planned) {  // its own model of the whole step, the update included; then the overhead
    const Calibration& c = model.calibration;
    SyncSpec sync;
    sync.strategy = model.strategy.sync;
    sync.knobs = model.strategy.knobs;
    prediction.step_ms = model.schedule.planned({c.forward_ms, c.update_ms, steps, comm_ms, model.layout, plan}, sync) +
        model.tail_ms - c.update_ms;
  } else {
    double compute_end = model.compute_start, comm_end = model.comm_start;
    ob::run_pipeline(steps, comm_ms, ready, compute_end, comm_end);
    prediction.step_ms = std::max(compute_end, comm_end) + model.tail_ms;
  }
  if (!model.residual.empty() && !plan.buckets.empty()) {  // the residual at the plan's sizes, weighted as sigma_plan
    double corrected = 0;
    for (const Bucket& bucket : plan.buckets) {  // (buckets of no isolated time, as extrapolated: weighed equally)
      const double bytes = bucket_bytes(bucket);
      const double weight = total > 0 ? model.isolated_ms(bytes) : 1.0;
      corrected += weight * log_linear(model.strategy.bytes, model.residual, bytes);
    }
    prediction.residual = corrected / (total > 0 ? total : plan.buckets.size());
    prediction.step_ms *= prediction.residual;
  }
  return prediction;
}

std::vector<double> StepModel::residuals() const {
  const StrategyCalibration& s = strategy;
  if (s.overlap_ms.size() != s.bytes.size() || s.plan_mb.size() != s.bytes.size()) return {};
  static const Target kCalibrated;  // the calibrated ranks and link
  const StepModel calibrated(calibration, strategy, kCalibrated, false);
  std::vector<double> out;
  for (std::size_t k = 0; k < s.bytes.size(); ++k) {
    const BucketPlan plan = as_run(plan_by_size(layout, s.plan_mb[k], s.plan_mb[k]));
    out.push_back(s.overlap_ms[k] / predict_with(calibrated, plan).step_ms);
  }
  return out;
}

// `best` or a better choice among `plans` at another value of each of the schedule's searched knobs (Knob::search),
// one knob at a time from the best so far.
PlanChoice best_knobs(const Calibration& calibration, StrategyCalibration strategy, const Target& target,
                      const std::vector<BucketPlan>& plans, PlanChoice best) {
  const int layers = calibration.layout().steps();
  for (const Knob& knob : schedule_of(strategy.sync).knobs) {
    if (!knob.search) continue;
    for (const int value : knob.search(layers)) {
      strategy.knobs = best.knobs;
      strategy.knobs[knob.name] = value;
      const StepModel model(calibration, strategy, target);
      for (const BucketPlan& plan : plans) {
        const Prediction prediction = predict_with(model, plan);
        if (prediction.step_ms < best.prediction.step_ms) best = {strategy.sync, plan, prediction, strategy.knobs};
      }
    }
  }
  return best;
}

bool same_plan(const BucketPlan& a, const BucketPlan& b) {
  if (a.buckets.size() != b.buckets.size()) return false;
  for (std::size_t k = 0; k < a.buckets.size(); ++k) {
    if (a.buckets[k].end != b.buckets[k].end) return false;
  }
  return true;
}

}  // namespace

GradientLayout Calibration::layout() const {
  return step_elements.empty() ? GradientLayout::equal(layers, hidden) : GradientLayout::of_sizes(step_elements);
}

const std::vector<double> kCandidateCapsMb = {1, 2, 5, 10, 25, 50, 64, 100, 128, 256, 512, 1024};

std::pair<double, double> StrategyCalibration::comm_line_at(double m) const {
  if (bytes.size() == 1) return {0.0, comm_ms[0] / bytes[0]};
  const std::size_t k = segment(bytes, m);
  const double slope = (comm_ms[k + 1] - comm_ms[k]) / (bytes[k + 1] - bytes[k]);
  return {comm_ms[k] - slope * bytes[k], slope};
}

double StrategyCalibration::comm_ms_at(double m, bool* extrapolated) const {
  if (extrapolated) *extrapolated = m < bytes.front() || m > bytes.back();
  const auto [intercept, slope] = comm_line_at(m);
  return std::max(0.0, intercept + slope * m);
}

double StrategyCalibration::gap_ms_at(double m) const { return log_linear(bytes, gap_ms, m); }
double StrategyCalibration::stretch_at(double m) const { return log_linear(bytes, stretch, m); }
double StrategyCalibration::slowdown_at(double m) const { return log_linear(bytes, slowdown, m); }

Prediction predict(const Calibration& calibration, const StrategyCalibration& strategy, const BucketPlan& plan,
                   const Target& target) {
  return predict_with(StepModel(calibration, strategy, target), plan);
}

int pieces_per_layer(int layers) { return std::max(1, std::min(8, 512 / std::max(1, layers))); }

std::vector<PlanChoice> choose_plans(const Calibration& calibration, const std::vector<std::string>& syncs,
                                     const Target& target) {
  std::vector<PlanChoice> choices;
  for (const auto& strategy : calibration.strategies) {
    if (!syncs.empty() && std::find(syncs.begin(), syncs.end(), strategy.sync) == syncs.end()) continue;
    const StepModel model(calibration, strategy, target);
    PlanChoice best{strategy.sync, {}, {}, strategy.knobs};
    best.prediction.step_ms = std::numeric_limits<double>::infinity();
    std::vector<BucketPlan> candidates;
    auto consider = [&](const BucketPlan& given) {  // as the strategy runs it: a sharded one, in whole tensors
      const BucketPlan plan = model.as_run(given);
      const Prediction prediction = predict_with(model, plan);
      if (prediction.step_ms < best.prediction.step_ms) best = {strategy.sync, plan, prediction, strategy.knobs};
      candidates.push_back(plan);
      return prediction;
    };
    // A plan's slowdown lies between the calibrated extremes: the programme at slowdowns across that range, then
    // from the best plan's own slowdown until the plan repeats.
    const auto [low, high] = std::minmax_element(strategy.slowdown.begin(), strategy.slowdown.end());
    constexpr int kGrid = 16;
    for (int k = 0; k <= kGrid; ++k) consider(best_for_slowdown(model, *low + (*high - *low) * k / kGrid));
    BucketPlan previous = best.plan;
    for (int round = 0; round < 8; ++round) {
      BucketPlan plan = best_for_slowdown(model, best.prediction.slowdown);
      consider(plan);
      if (same_plan(plan, previous)) break;
      previous = std::move(plan);
    }
    // Where the slowdown grows with bucket size, a plan of small buckets may beat every programme's plan (each
    // assumed one slowdown for all): the equal and DDP-style plans of the usual caps are candidates too.
    for (double mb : kCandidateCapsMb) {
      consider(plan_by_size(model.layout, mb, mb));
      consider(plan_by_size(model.layout, mb, 1.0));
      consider(plan_like_ddp(model.layout, mb));
    }
    // The correction weighs plans by their sizes, which no programme sees: the calibrated plans themselves, and one
    // bucket a backward step (--plan layer's), are candidates too.
    for (double mb : strategy.plan_mb) consider(plan_by_size(model.layout, mb, mb));
    consider(plan_from_ends(model.layout, model.layout.ends));
    best = best_knobs(calibration, strategy, target, candidates, best);
    choices.push_back(best);
  }
  std::stable_sort(choices.begin(), choices.end(), [](const PlanChoice& a, const PlanChoice& b) {
    return a.prediction.step_ms < b.prediction.step_ms;
  });
  return choices;
}

}  // namespace phase4
