#include "phase4_chunked_nccl/driver/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "common/cuda/cuda_check.hpp"
#include "common/errors.hpp"
#include "common/mpi_check.hpp"
#include "common/metrics.hpp"
#include "common/mpi_session.hpp"
#include "common/options.hpp"
#include "common/stats.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/driver/nccl_comm.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"

namespace phase4 {

void require_sm_margin(const std::vector<Config>& points) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (const auto& point : points) {
    ob::require(point.gemm_sm_margin < sms, "--gemm-sm-margin", std::to_string(point.gemm_sm_margin),
                "fewer than this GPU's " + std::to_string(sms) + " SMs");
  }
}

namespace {

// The communicators points and calibrations need, one per ncclConfig_t they ask for, each made once and kept: a
// shuffled sweep of nccl and ce points (CTA policy zero) would otherwise make one anew at most points.
class CommCache {
 public:
  CommCache(int rank, int ranks, MPI_Comm comm, std::atomic<ncclComm_t>& live)
      : rank_(rank), ranks_(ranks), comm_(comm), live_(live) {}
  ~CommCache() { live_ = nullptr; }
  ncclComm_t get(const NcclSettings& settings) {
    auto found = std::find_if(comms_.begin(), comms_.end(),
                              [&](const std::unique_ptr<NcclComm>& c) { return c->settings() == settings; });
    if (found == comms_.end()) {
      ob::progress_note("NCCL set-up");
      comms_.push_back(std::make_unique<NcclComm>(rank_, ranks_, comm_, settings));
      found = comms_.end() - 1;
    }
    live_ = (*found)->get();  // the one the watchdog aborts on a stall
    return (*found)->get();
  }

 private:
  int rank_, ranks_;
  MPI_Comm comm_;
  std::atomic<ncclComm_t>& live_;
  std::vector<std::unique_ptr<NcclComm>> comms_;
};

// Per-task medians of the slowest rank, and their sum over `tasks`.
std::vector<double> medians(const std::vector<std::vector<double>>& tasks, MPI_Comm comm) {
  std::vector<double> out;
  for (const auto& samples : tasks) out.push_back(ob::slowest_median(samples, comm));
  return out;
}
double summed_medians(const std::vector<std::vector<double>>& tasks, MPI_Comm comm) {
  return ob::sum_ms(medians(tasks, comm));
}

// Warm-up before the calibration's first measured run: a step of a few milliseconds would otherwise be timed on
// clocks still rising (seen: the first compute-only run of a process 25 % slower than later ones). Every run after
// it follows the iteration protocol's steady-state rule (--warmup, then until steady), on a GPU already warm.
constexpr double kCalibrationWarmupMs = 500;

// The run's samples of part `name` ([layer][iteration]; none where the run did not mark it).
const std::vector<std::vector<double>>& part_samples(const ModeRun& run, const std::string& name) {
  static const std::vector<std::vector<double>> none;
  const auto found = run.part_ms.find(name);
  return found == run.part_ms.end() ? none : found->second;
}

// The own step of a strategy whose schedule has parts of its own (`schedule`; planner.hpp, ScheduleCalibration),
// from one size's runs: the compute-only run's forward layers, compute parts and backward steps, the comm-only run's
// comm parts (at the timed steps' pace: at_timed_pace), and the overlapped run's stretch of each comm part and
// slowdown of the forward layers (ratios of unscaled parts).
ScheduleCalibration schedule_step(const ScheduleRow& schedule, const ModeRun& compute, const ModeRun& alone,
                                  const ModeRun& overlapped, MPI_Comm comm) {
  const ModeRun paced = at_timed_pace(compute), paced_alone = at_timed_pace(alone);
  ScheduleCalibration s;
  s.layer_ms = medians(paced.layer_ms, comm);
  s.step_ms = medians(paced.step_ms, comm);
  s.iteration_ms = ob::summarize(ob::max_across_ranks(compute.iter_ms, comm)).p50;
  double compute_parts = 0;
  for (const auto& part : schedule.parts) {
    if (!part.comm) {
      s.part_ms[part.name] = medians(part_samples(paced, part.name), comm);
      compute_parts += ob::sum_ms(s.part_ms[part.name]);
      continue;
    }
    s.part_ms[part.name] = medians(part_samples(paced_alone, part.name), comm);
    const double isolated = summed_medians(part_samples(alone, part.name), comm);
    s.stretch[part.name] = isolated > 0 ? summed_medians(part_samples(overlapped, part.name), comm) / isolated : 1.0;
  }
  s.forward_rest_ms =
      std::max(0.0, ob::slowest_median(paced.forward_ms, comm) - ob::sum_ms(s.layer_ms) - compute_parts);
  s.forward_slowdown = summed_medians(overlapped.layer_ms, comm) / summed_medians(compute.layer_ms, comm) - 1;
  return s;
}

// One calibrated size of `strategy` (its plan cut at `mb`) from its plan's comm-only and overlapped runs: c(m) the
// median of the full-size buckets (the last one may be smaller), g(m), r(m) and sigma(m), and the overlapped step the
// planner's correction divides by its prediction (planner.hpp). Times at the timed steps' pace (at_timed_pace), the
// stretch and the slowdown ratios of unscaled parts (`compute_backward` too).
void add_size(StrategyCalibration& strategy, double mb, const BucketPlan& plan, const ModeRun& alone,
              const ModeRun& overlapped, double compute_backward, MPI_Comm comm) {
  const ModeRun paced = at_timed_pace(alone);
  const std::uint64_t largest = plan.largest();
  std::vector<double> full;
  double busy = 0;  // the comm stream's time in its buckets
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const double ms = ob::slowest_median(paced.bucket_ms[b], comm);
    busy += ms;
    if (plan.buckets[b].size() == largest) full.push_back(ms);
  }
  // The comm-only step's time beyond its buckets (and beyond the schedule's own comm parts, where it has any).
  double alone_ms = ob::summarize(ob::max_across_ranks(alone.iter_ms, comm)).p50;
  for (const auto& [name, samples] : paced.part_ms) alone_ms -= summed_medians(samples, comm);
  strategy.bytes.push_back(largest * 4.0);
  strategy.comm_ms.push_back(ob::summarize(full).p50);
  strategy.gap_ms.push_back(std::max(0.0, alone_ms - busy) / plan.buckets.size());
  strategy.stretch.push_back(summed_medians(overlapped.bucket_ms, comm) / summed_medians(alone.bucket_ms, comm));
  strategy.slowdown.push_back(ob::slowest_median(overlapped.backward_total_ms, comm) / compute_backward - 1);
  strategy.plan_mb.push_back(mb);
  strategy.overlap_ms.push_back(ob::summarize(ob::max_across_ranks(overlapped.iter_ms, comm)).p50);
}

// The planner's calibration (planner.hpp): for each planned strategy and each size of calibration_sizes() a plan of
// equal buckets run compute-only, comm-only and overlapped, in turn --passes times (the fastest all-reduce compute-only
// run's times are kept; a sharded strategy keeps its own); a size whose buckets, as the strategy runs them, are no
// larger than the last one's (a sharded strategy's whole tensors) is not run again.
Calibration calibrate_run(const Config& base, const std::string& gpu, int rank, int ranks, MPI_Comm comm,
                          ob::SteadyClock::time_point origin, CommCache& comms, std::ostream* progress) {
  Calibration calibration = describe_run(base.step_spec(), ranks, gpu);
  const auto sizes = calibration_sizes(base.model_spec());
  double best_iteration = 0;
  // The run the shared compute parts come from, ranked: an all-reduce schedule's before another's, then the faster.
  std::pair<bool, double> best_run{true, std::numeric_limits<double>::infinity()};
  bool warm = false;
  for (const auto& sync : base.planned_syncs()) {
    Config config = base;
    config.sync = sync;
    config.plan_mode = PlanMode::kCaps;
    config.chunks = 0;
    config.plan_ends.clear();
    config.common.check = false;
    config.common.iters = std::max(config.common.iters, 20);
    const ScheduleRow& schedule = schedule_of(sync);
    const bool own_step = !schedule.parts.empty();  // its schedule's parts calibrated with its own step
    // The shared compute parts are the all-reduce schedule's: a schedule with a model of its own (the carry's) holds
    // work in its compute-only run that its model places from them, so its runs give them only where none other does.
    const bool shared = !own_step && !schedule.planned;
    Trainer trainer(config.step_spec(), rank, ranks, comms.get(config.nccl_settings()), comm);
    if (!warm) {  // the trainer reads its config when it runs: one compute-only run of kCalibrationWarmupMs
      const ModeRun probe = trainer.run(ob::Mode::kCompute, trainer.adapt(base.plan()), false, origin);
      const double step = std::max(1e-3, ob::summarize(ob::max_across_ranks(probe.iter_ms, comm)).p50);
      config.common.warmup = std::max(config.common.warmup, static_cast<int>(std::ceil(kCalibrationWarmupMs / step)));
      trainer.run(ob::Mode::kCompute, trainer.adapt(base.plan()), false, origin);
      config.common.warmup = base.common.warmup;
      warm = true;
    }
    StrategyCalibration strategy;
    strategy.sync = sync;
    for (const Knob& knob : schedule.knobs) strategy.knobs[knob.name] = knob_value(config.knobs, knob.name);
    double own_iteration = 0;
    for (const double bytes : sizes) {
      const double mb = bytes / (1 << 20);
      const BucketPlan plan = trainer.adapt(plan_by_size(config.layout(), mb, mb));
      if (!strategy.bytes.empty() && plan.largest() * 4.0 <= strategy.bytes.back()) continue;  // onto the last size
      if (progress) {
        *progress << "phase4: calibration: --sync " << sync << ", " << plan.describe() << std::endl;
      }
      // The compute-only run of this plan: the slowdown divides by the backward of the same buckets. Each bucket
      // costs the compute stream work and waits of its own (ce's sums, every strategy's hand-overs), so many small
      // buckets slow the compute-only step (gpt2-xl's 5,942 buckets of 1 MiB: 209 ms against 178 ms); divided by
      // the first size's run, every larger size read as compute sped up by communication (slowdown -0.24). The
      // calibration's compute times are those of the fastest compute-only run, of any size and strategy.
      // The three modes in turn --passes times (a host-paced step drifts in a process: METRICS.md, "Passes").
      const auto runs = run_passes(trainer, plan, {ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kOverlap},
                                   config.passes, false, origin);
      const ModeRun &compute = runs[0], &alone = runs[1], &overlapped = runs[2];
      const double compute_backward = ob::slowest_median(compute.backward_total_ms, comm);
      const double iteration = ob::summarize(ob::max_across_ranks(compute.iter_ms, comm)).p50;
      if (!own_step && std::make_pair(!shared, iteration) < best_run) {
        best_run = {!shared, iteration};
        const ModeRun paced = at_timed_pace(compute);
        best_iteration = calibration.iteration_ms = iteration;
        calibration.forward_ms = ob::slowest_median(paced.forward_ms, comm);
        calibration.update_ms = ob::slowest_median(paced.update_ms, comm);
        calibration.step_ms = medians(paced.step_ms, comm);
      }
      if (own_step && (own_iteration == 0 || iteration < own_iteration)) {
        own_iteration = iteration;
        strategy.schedule = schedule_step(schedule, compute, alone, overlapped, comm);
      }
      add_size(strategy, mb, plan, alone, overlapped, compute_backward, comm);
    }
    calibration.strategies.push_back(strategy);
  }
  if (best_iteration == 0) {  // strategies with steps of their own only: the shared compute parts from the first's
    const ScheduleCalibration& s = calibration.strategies.front().schedule;
    calibration.iteration_ms = s.iteration_ms;
    calibration.step_ms = s.step_ms;
    calibration.forward_ms = ob::sum_ms(s.layer_ms) + s.forward_rest_ms;
    for (const auto& part : schedule_of(calibration.strategies.front().sync).parts) {
      if (!part.comm) calibration.forward_ms += ob::sum_ms(s.part_ms.at(part.name));
    }
  }
  return calibration;
}

// A --plan auto point with the plan (and strategy) of least predicted step.
Config resolve_plan(const Config& point, const Calibration& calibration, std::ostream* progress) {
  if (point.plan_mode != PlanMode::kAuto) return point;
  const auto choices = choose_plans(calibration, point.planned_syncs());
  Config resolved = point;
  resolved.sync = choices.front().sync;
  for (const Knob& knob : schedule_of(resolved.sync).knobs) {  // a searched knob as planned
    if (knob.search) resolved.knobs[knob.name] = knob_value(choices.front().knobs, knob.name);
  }
  for (const auto& bucket : choices.front().plan.buckets) resolved.plan_ends.push_back(bucket.end);
  if (progress) {
    *progress << "phase4: plan auto:";
    for (const auto& choice : choices) {
      *progress << " --sync " << choice.sync;
      for (const Knob& knob : schedule_of(choice.sync).knobs) {
        if (knob.search) *progress << " --" << knob.name << " " << knob_value(choice.knobs, knob.name);
      }
      *progress << " " << choice.plan.describe() << " predicted " << ob::format_number(choice.prediction.step_ms, 4)
                << " ms;";
    }
    *progress << " running --sync " << resolved.sync << std::endl;
  }
  return resolved;
}

}  // namespace

std::vector<Calibration> load_calibrations(const Config& config, int ranks, const std::string& gpu, MPI_Comm comm) {
  if (config.calibrations.empty()) return {};  // none given: the run measures the one it needs (run_sweep)
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const auto points = config.sweep_points();
  std::vector<Calibration> calibrations;
  for (const auto& path : config.calibrations) {
    std::string text;  // read by rank 0, the same text on every rank
    if (rank == 0) text = ob::read_input_file("--calibration", path, kMostCalibrationBytes);
    Calibration calibration = Calibration::parse(ob::first_nonempty(text, comm), path);
    std::string differs;  // from the first point's model: the difference named when no point is of its model
    bool used = false;
    for (const auto& point : points) {
      const std::string here = calibration.mismatch(describe_run(point.step_spec(), ranks, gpu));
      used = used || here.empty();
      if (differs.empty()) differs = here;
    }
    ob::require(used, "--calibration", path, differs);
    calibrations.push_back(std::move(calibration));
  }
  for (const auto& point : points) {
    const Calibration* own = calibration_of(calibrations, point, ranks, gpu);
    for (const auto& sync : point.planned_syncs()) {
      if (point.plan_mode != PlanMode::kAuto) continue;
      ob::require(own != nullptr, "--calibration", config.calibrations.empty() ? "" : config.calibrations.front(),
                  "none is of the model of point " + point.point_label() + " (--plan auto needs one per shape)");
      ob::require(own->strategy(sync) != nullptr, "--calibration", config.calibrations.front(),
                  "it holds no calibration of --sync " + sync + " (measure it with --calibrate --plan-syncs)");
    }
  }
  return calibrations;
}

const Calibration* calibration_of(const std::vector<Calibration>& calibrations, const Config& point, int ranks,
                                  const std::string& gpu) {
  const Calibration run = describe_run(point.step_spec(), ranks, gpu);
  for (const auto& calibration : calibrations) {
    if (calibration.mismatch(run).empty()) return &calibration;
  }
  return nullptr;
}

SweepResult run_sweep(const std::vector<Config>& points, int rank, int ranks, MPI_Comm comm,
                      ob::SteadyClock::time_point origin, const ob::PowerMonitor* power,
                      std::atomic<ncclComm_t>& live_comm, std::ostream* progress,
                      const std::vector<Calibration>& calibrations, bool calibrate) {
  SweepResult result;
  CommCache comms(rank, ranks, comm, live_comm);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  bool needs = calibrate;
  for (const auto& point : points) needs = needs || point.plan_mode == PlanMode::kAuto;
  std::vector<Calibration> known = calibrations;
  if (needs && known.empty()) {  // one shape (validate() refuses a measured calibration of several)
    result.measured = calibrate_run(points.front(), prop.name, rank, ranks, comm, origin, comms, progress);
    known.push_back(*result.measured);
  }
  for (std::size_t p = 0; p < points.size(); ++p) {
    const Calibration* calibration = calibration_of(known, points[p], ranks, prop.name);
    const Config point = calibration ? resolve_plan(points[p], *calibration, progress) : points[p];
    // A trainer per point: an accum-steps sweep changes how many micro-batches the model holds, a sync sweep the
    // strategy's buffers.
    Trainer trainer(point.step_spec(), rank, ranks, comms.get(point.nccl_settings()), comm, power);
    if (progress) {
      *progress << "phase4: [" << p + 1 << "/" << points.size() << "] " << point.point_label() << ", "
                << trainer.adapt(point.plan()).describe() << std::endl;
    }
    auto point_result = run_point(point, trainer, comm, origin, progress, calibration);
    result.rows.insert(result.rows.end(), point_result.rows.begin(), point_result.rows.end());
    if (points.size() > 1) ob::label_point(point_result.events, point.point_label());  // a process group each
    result.events.insert(result.events.end(), point_result.events.begin(), point_result.events.end());
    result.order.push_back(point.point_label());
    if (result.failure.empty() && !point_result.failure.empty()) {
      result.failure = point.point_label() + ": " + point_result.failure;
    }
  }
  return result;
}

}  // namespace phase4
