// The planner (METRICS.md, "The planner"): a calibration measured once per model, hardware and commit, the overlapped
// step it predicts for any bucket plan, and the plan (and strategy) that minimises that prediction.
//
// Model. Forward F, backward steps b_s (layer L first) and update U come from the compute-only run. Each strategy
// has, per calibrated message size, its isolated time per bucket c(m) (piecewise alpha-beta between calibrated
// sizes), the gap g(m) the comm stream leaves between buckets of that size (launches, event waits), the stretch
// r(m) of a bucket's time under overlap, and the slowdown sigma(m) of the backward under overlap, all measured on
// plans of equal m-sized buckets. A plan's predicted step is the schedule of schedule_bound_ms with every backward
// step b_s (1 + sigma_plan) and every bucket c(m) r(m) + g(m), where sigma_plan is
// sigma(m) averaged over the plan's buckets, weighted by their time: F + pipeline + U + the iteration's overhead.
//
// Choice. For a fixed sigma the predicted step is a pipeline whose bucket finish times compose monotonically, so a
// dynamic programme over bucket boundaries (every layer cut into equal pieces) finds the plan of least predicted
// step exactly. sigma_plan lies between the calibrated extremes: the programme runs at 17 values across them and
// then at the best plan's own sigma_plan until the plan repeats; the best prediction wins. Exact where sigma does not
// depend on size; otherwise the best of those programmes' plans and of the equal, DDP-style (1 MiB first bucket) and
// DDP's own (plan_like_ddp: whole steps) plans of kCandidateCapsMb (a slowdown that grows with size can favour small
// buckets that no single-sigma programme picks), of the calibrated plans and of one bucket a backward step (the
// correction below depends on a plan's sizes, which no programme sees).
//
// Correction. The calibration also times, per size, the overlapped step of its plan of equal buckets; the model's own
// prediction of that plan (on the calibrated ranks and link) leaves a residual, measured / predicted, per size. A
// plan's prediction is multiplied by the residual at its buckets' sizes (linear in log2 of the size, weighted by
// their time as sigma_plan is), on any ranks and link: what the model misses of a strategy (ce's sums and stream
// waits, a sharded schedule's gathers) is measured, not modelled. Calibrations made before the steps were recorded
// hold none: no correction.
//
// Strategies whose schedule models its whole step (ScheduleRow::planned) are predicted by that model from the shared
// compute-only parts, the backward steps slowed and the buckets' times as above; the residual corrects it as any
// other. A schedule's knob with a search (Knob::search, core/knobs.hpp) is planned too: the candidate plans at each
// value it names, besides the calibrated one.
//
// Strategies whose schedule has parts of its own (sharded, sharded-ce: schedule/sharded.cpp) are planned the same
// way from their own calibration (ScheduleCalibration): their compute-only step (each forward layer's time, the
// schedule's compute parts, the backward steps), each comm part alone per layer, its stretch and the forward's
// slowdown under overlap. The predicted step replays the schedule's forward (its row's model: ScheduleRow::forward)
// and then the backward pipeline of the reductions behind it, as above; where its buckets hold whole tensors, the
// programme cuts at backward steps only. For other rank counts (phase4_predict) a comm part scales as the reductions'
// time at the layer's size does, a compute part on the rank's share of the slices as the update does.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "phase4_chunked_nccl/core/bucket_plan.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"

namespace phase4 {

// One strategy's communication as calibrated: per message size (ascending), the isolated time of one bucket, and
// the gap between buckets on the comm stream, the stretch and slowdown under overlap; a sharded one's step.
struct StrategyCalibration {
  std::string sync;
  std::vector<double> bytes, comm_ms, gap_ms, stretch, slowdown;
  // Per size: the cap its plan was cut at (MiB; plan_by_size, whole tensors for a sharded strategy) and that plan's
  // measured overlapped step (slowest rank's median). Empty in calibrations made before they were recorded.
  std::vector<double> plan_mb, overlap_ms;
  ScheduleCalibration schedule;  // its schedule's own step, where the schedule has parts of its own (schedules.hpp)
  // Its schedule's knobs (core/knobs.hpp) as calibrated, which the predictions keep (unless the planner searches
  // one: PlanChoice::knobs).
  KnobValues knobs;

  // c(m): linear between the two calibrated sizes around m (latency + bytes / bandwidth of that range); outside the
  // range, the nearest range's line, and *extrapolated set.
  double comm_ms_at(double bytes, bool* extrapolated = nullptr) const;
  // That line at `bytes`: its intercept (ms) and slope (ms per byte); one size: through the origin.
  std::pair<double, double> comm_line_at(double bytes) const;
  // g(m), r(m) and sigma(m): linear in log2(m) between calibrated sizes, the nearest value outside.
  double gap_ms_at(double bytes) const;
  double stretch_at(double bytes) const;
  double slowdown_at(double bytes) const;
};

struct Calibration {
  // What it was measured on: a calibration predicts only the same model on the same hardware, build and ranks.
  int hidden = 0, layers = 0, batch = 0, accum_steps = 1, ranks = 0;
  bool tf32 = true, graph = false;  // graph: every step replayed from a CUDA graph (--graph)
  std::string comm_dtype = "fp32", gpu, commit, host, date_utc;
  // The compute-only run (slowest rank's medians).
  double forward_ms = 0, update_ms = 0, iteration_ms = 0;
  std::vector<double> step_ms;  // per backward step, layer L first
  std::vector<StrategyCalibration> strategies;
  // The gradient each backward step writes, where it is not `layers` steps of hidden^2 (a transformer's, measured
  // with --model or estimated from this calibration: model_estimate.hpp), and that model's name.
  std::vector<std::uint64_t> step_elements;
  std::string model;
  bool compute_estimated = false;  // step_ms and forward_ms estimated (model_estimate.hpp), not measured

  // The backward steps' gradient: step_elements, else `layers` equal layers of hidden^2.
  GradientLayout layout() const;

  const StrategyCalibration* strategy(const std::string& sync) const;  // nullptr if not calibrated
  nlohmann::json to_json() const;
  // Throws ob::UsageError naming `source` and the first missing or malformed key.
  static Calibration from_json(const nlohmann::json& json, const std::string& source);
  // The same from a file's text: "not JSON" is a UsageError too.
  static Calibration parse(const std::string& text, const std::string& source);
  // "" when this calibration is of `other`'s model, ranks, GPU and commit; else the first difference, as
  // "hidden is 2048 here but 4096 in the calibration".
  std::string mismatch(const Calibration& other) const;
  // "" when every slowdown is at least -kSlowdownNoise; else the first one below it, named: an overlapped backward
  // clearly faster than its compute-only run breaks the slowdown's definition (METRICS.md), as calibrations made
  // before 2e5ca33 show, which divided by another plan's compute-only run. Loaders say it as a warning.
  std::string negative_slowdown() const;
};

// The largest calibration file read (a transformer's of thousands of tensors is a few hundred KB).
constexpr std::uintmax_t kMostCalibrationBytes = 64ull << 20;

// Run-to-run variation of a calibration's slowdown: calibrations since 2e5ca33 go down to -0.031.
constexpr double kSlowdownNoise = 0.05;

// A calibration's description of the run of `step` on `ranks` ranks of `gpu` with this build (no measurements):
// what mismatch() compares and what a measured calibration starts from.
Calibration describe_run(const StepSpec& step, int ranks, const std::string& gpu);

// The sizes a calibration measures (bytes of fp32 gradient per bucket): from min(1 MiB, gradient / 8), or
// gradient / kMostCalibratedBuckets where that is larger, by factors of 4, and the whole gradient last.
std::vector<double> calibration_sizes(const ModelSpec& model);

// The most buckets of one calibrated size: llama3-8b's 8 blocks in 1 MiB buckets are 10,665 all-reduces a step, a
// calibration that had not finished in 240 s over NCCL's host-memory transport; smaller sizes are extrapolated.
constexpr double kMostCalibratedBuckets = 1024;

// A bucket's time against its bytes, for predictions with another network (overlap_bench/planner/predict.py's what-if).
using CommTime = std::function<double(double bytes)>;

struct Prediction {
  double step_ms = 0;
  double slowdown = 0;  // sigma_plan
  double residual = 1;  // the correction step_ms holds: measured / predicted at the plan's sizes (1: none)
  bool extrapolated = false;  // a bucket outside the calibrated sizes
};

// Where a prediction is for: the calibrated ranks and link (the defaults), or `ranks` ranks whose bucket times are
// `comm` (phase4_predict's other machines).
struct Target {
  Target(CommTime comm_time = nullptr, int rank_count = 0) : comm(std::move(comm_time)), ranks(rank_count) {}
  CommTime comm;
  int ranks;  // 0: the calibration's
};

// The predicted overlapped step of `plan` (buckets as the strategy runs them) with `strategy`'s calibration.
Prediction predict(const Calibration& calibration, const StrategyCalibration& strategy, const BucketPlan& plan,
                   const Target& target = {});

struct PlanChoice {
  std::string sync;
  BucketPlan plan;
  Prediction prediction;
  KnobValues knobs;  // its schedule's knobs planned with it: the calibrated ones, a searched one as chosen
};

// Bucket caps (MiB) whose plans the choice and the DDP recommendation also weigh.
extern const std::vector<double> kCandidateCapsMb;

// Pieces every backward step is cut into for the programme: at most 8, at most 512 pieces in all (at least one).
int pieces_per_layer(int layers);

// The plan of least predicted step for each strategy in `syncs` (all calibrated ones when empty), the best of them
// first; for a strategy whose schedule has a knob with a search (Knob::search), that knob too: the same candidate
// plans at every value the search names besides the calibrated one. Boundaries fall on 1/pieces_per_layer() of a
// backward step (a sharded strategy's: on whole steps).
std::vector<PlanChoice> choose_plans(const Calibration& calibration, const std::vector<std::string>& syncs = {},
                                     const Target& target = {});

// The strategy DDP's buckets are predicted with: nccl's all-reduces where calibrated, else the first all-reduce
// strategy's (null: sharded ones only).
const StrategyCalibration* ddp_like(const Calibration& c);

// DDP's plan for a cap as PyTorch assigns it (plan_like_ddp); the cap of least predicted step among the candidates
// of at least min_cap_mb, and that step (NaN and NaN without an all-reduce strategy). 25 MiB (or the least candidate
// above min_cap_mb) unless another cap is predicted faster by more than a millionth.
double best_ddp_cap(const Calibration& c, const Target& target, double* best_ms, double min_cap_mb = 0);

}  // namespace phase4
