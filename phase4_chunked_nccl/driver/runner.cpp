#include "phase4_chunked_nccl/driver/runner.hpp"

#include <cmath>
#include <cstring>

#include "common/csv_writer.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/errors.hpp"
#include "common/metrics.hpp"
#include "common/mpi_check.hpp"
#include "common/overlap_rows.hpp"
#include "common/stats.hpp"
#include "common/verify.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/driver/bound_rows.hpp"

namespace phase4 {
namespace {

// Weights after kEquivalenceSteps steps from the initial weights (eager unless `graph`).
std::vector<float> weights_after(Trainer& trainer, ob::Mode mode, const BucketPlan& plan,
                                 ob::SteadyClock::time_point origin, bool eager, bool* ranks_agree) {
  trainer.reset_weights();
  const auto run = trainer.run(mode, plan, true, origin, kEquivalenceSteps, eager);
  *ranks_agree = *ranks_agree && run.ranks_agree;
  auto weights = trainer.download_weights();
  trainer.reset_weights();
  return weights;
}

// `got` against `want` on every rank: bitwise (all ranks) and the largest relative norm error; "" or the failure.
std::string compare_weights(const std::vector<float>& got, const std::vector<float>& want, double tolerance,
                            const std::string& what, const std::string& column, MPI_Comm comm, ob::SummaryRow& row) {
  const std::vector<double> reference(want.begin(), want.end());
  const auto check = ob::compare_relative(got.data(), reference.data(), reference.size());
  int bitwise = std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
  int all_bitwise = 0;
  MPI_CHECK(MPI_Allreduce(&bitwise, &all_bitwise, 1, MPI_INT, MPI_MIN, comm));
  const double rel = ob::max_across_ranks({check.finite ? check.rel_error : INFINITY}, comm)[0];
  row.set(column + "_bitwise", all_bitwise == 1).set(column + "_rel_error", rel);
  if (rel <= tolerance) return "";
  return what + " after " + std::to_string(kEquivalenceSteps) + " steps: " + check.describe(tolerance);
}

// The checks of one point, into `row` (merged into the overlap row):
//  - overlap against seq: the same reductions in the same order on the same data, so the same weights (<= 1e-6);
//  - --graph: the replayed seq against eager seq, bit for bit;
//  - --comm-dtype bf16: the error bf16 communication puts into one step's gradient (<= kBf16GradientTolerance);
//  - --sync other than nccl: seq against the nccl strategy's seq (<= strategy_tolerance(ranks)), and the synchronised
//    gradient against a plain fp32 all-reduce;
//  - --accum-steps K: K micro-steps against one step on the K-times batch (fp32 tolerance, 1e-5).
std::string check_point(const Config& config, Trainer& trainer, const BucketPlan& plan, MPI_Comm comm, int rank,
                        int ranks, ob::SteadyClock::time_point origin, ob::SummaryRow& row) {
  bool agree = true;
  ob::CheckLog checks;
  auto note = [&](const std::string& found) {
    if (!found.empty()) checks.fail(found);
  };
  const auto seq = weights_after(trainer, ob::Mode::kSeq, plan, origin, true, &agree);
  const auto overlap = weights_after(trainer, ob::Mode::kOverlap, plan, origin, false, &agree);
  note(compare_weights(overlap, seq, 1e-6, "overlap weights differ from seq weights", "overlap_vs_seq", comm, row));
  if (config.graph) {
    const auto replayed = weights_after(trainer, ob::Mode::kSeq, plan, origin, false, &agree);
    note(compare_weights(replayed, seq, 0.0, "graph replay differs from eager execution", "graph_vs_eager", comm, row));
  }
  const bool bf16 = config.comm_dtype == WireType::kBf16;
  if (bf16 || config.sync != reference_sync()) {
    ob::progress_note("the gradient check");
    const double error = ob::max_across_ranks({trainer.comm_gradient_error(plan)}, comm)[0];
    trainer.reset_weights();
    row.set("comm_grad_rel_error", error);
    const double tolerance = bf16 ? kBf16GradientTolerance : strategy_tolerance(ranks);
    if (!(error <= tolerance)) {
      note("--sync " + config.sync + " --comm-dtype " + name(config.comm_dtype) + ": gradient relative error " +
           ob::format_number(error) + " above " + ob::format_number(tolerance));
    }
  }
  if (config.sync != reference_sync() && !bf16) {
    ob::progress_note("the strategy check");
    const Config nccl = config.strategy_reference();
    Trainer reference(nccl.step_spec(), rank, ranks, trainer.comm(), comm);
    const auto want = weights_after(reference, ob::Mode::kSeq, plan, origin, true, &agree);
    note(compare_weights(seq, want, strategy_tolerance(ranks), "--sync " + config.sync + " differs from --sync nccl",
                         "sync_vs_nccl", comm, row));
  }
  if (config.accum_steps > 1) {
    ob::progress_note("the accumulation check");
    const Config big = config.accumulation_reference();
    Trainer reference(big.step_spec(), rank, ranks, trainer.comm(), comm);
    const auto want = weights_after(reference, ob::Mode::kSeq, plan, origin, true, &agree);
    note(compare_weights(seq, want, 1e-5,
                         std::to_string(config.accum_steps) + " micro-steps differ from one step on the " +
                             std::to_string(config.accum_steps) + "-times batch",
                         "accum_vs_big_batch", comm, row));
  }
  if (!agree) return "weights differ between ranks after a step";
  return checks.first();
}

// A comm-only run's communication as per-task medians, the collective's own time (ob::fastest_median): per bucket,
// and per forward layer of each comm part of the schedule's own (a comm-only run times no compute part).
struct CommTasks {
  std::vector<double> buckets;
  PartTimes parts;
};

CommTasks comm_medians(const ModeRun& run, MPI_Comm comm) {
  CommTasks tasks;
  for (const auto& samples : run.bucket_ms) tasks.buckets.push_back(ob::fastest_median(samples, comm));
  for (const auto& [name, per_layer] : run.part_ms) {
    for (const auto& samples : per_layer) tasks.parts[name].push_back(ob::fastest_median(samples, comm));
  }
  return tasks;
}

// Each task's faster time of the two.
CommTasks fastest_of(CommTasks a, const CommTasks& b) {
  for (std::size_t k = 0; k < a.buckets.size(); ++k) a.buckets[k] = std::min(a.buckets[k], b.buckets[k]);
  for (auto& [name, times] : a.parts) {  // a part the other schedule has not: this one's own
    const auto& other = b.parts.count(name) ? b.parts.at(name) : times;
    for (std::size_t k = 0; k < times.size(); ++k) times[k] = std::min(times[k], other.at(k));
  }
  return a;
}

double local_median(const std::vector<double>& samples) { return ob::summarize(samples).p50; }

// The schedule's bound (the trainer's schedule knows how): each rank's from its own compute run's per-part medians
// and the communication's per-task medians, the slowest rank's (ob::fastest_median says why).
double bound_from(const Config& config, Trainer& trainer, const BucketPlan& plan, const ModeRun& compute,
                  const CommTasks& tasks, double t_comp, double t_comm, MPI_Comm comm) {
  MeasuredParts parts;
  for (int s = 0; s < config.layers; ++s) parts.backward_ms.push_back(local_median(compute.step_ms[s]));
  for (const auto& samples : compute.layer_ms) parts.layer_ms.push_back(local_median(samples));
  for (const auto& [name, per_layer] : compute.part_ms) {  // the schedule's compute parts (the compute-only run's)
    for (const auto& samples : per_layer) parts.part_ms[name].push_back(local_median(samples));
  }
  parts.ready_after = plan.ready_steps();
  parts.forward_ms = local_median(compute.forward_ms);
  parts.update_ms = local_median(compute.update_ms);
  parts.bucket_ms = tasks.buckets;
  for (const auto& [name, times] : tasks.parts) parts.part_ms[name] = times;
  parts.t_comp = t_comp;
  parts.t_comm = t_comm;
  return ob::max_across_ranks({trainer.bound(parts)}, comm)[0];
}

// --mode interference: a row per message size, the slowest rank's medians over the passes (METRICS.md, "The
// interference map"). time_ms is the GEMM's time inside the collective loop.
PointResult interference_point(const Config& config, Trainer& trainer, const ob::SummaryRow& base, MPI_Comm comm,
                               std::ostream* progress) {
  int ranks = 1;
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  PointResult result;
  for (const double mb : config.interference_sizes()) {
    if (progress) *progress << "phase4: " << config.point_label() << ": interference at " << mb << " MiB" << std::endl;
    const auto elements = static_cast<std::uint64_t>(std::llround(mb * (1 << 20) / sizeof(float)));
    const Interference map =
        trainer.interference(std::max<std::uint64_t>(elements, 1), config.interference_window_ms, config.common.iters);
    ob::SummaryRow row = base;
    row.mode = kInterferenceMode;
    row.config("msg_mb", sizeof(float) * static_cast<double>(map.elements) / (1 << 20));
    row.set_times(ob::max_across_ranks(map.gemm_overlap_ms, comm));
    const double gemm = ob::slowest_median(map.gemm_ms, comm), gemm_overlap = row.time_ms.p50;
    const double alone = ob::slowest_median(map.comm_ms, comm),
                 stretched = ob::slowest_median(map.comm_overlap_ms, comm);
    const double algbw = ob::algbw_GBps(trainer.wire_bytes(map.elements), alone);
    row.set("gemm_ms", gemm)
        .set("gemm_overlap_ms", gemm_overlap)
        .set("compute_slowdown", gemm_overlap / gemm - 1)
        .set("comm_ms", alone)
        .set("comm_overlap_ms", stretched)
        .set("comm_stretch", stretched / alone)
        .set("algbw_GBps", algbw)
        .set("busbw_GBps", ob::allreduce_busbw_GBps(algbw, ranks))
        .set("covered", ob::total_across_ranks(map.covered ? 0 : 1, comm) == 0);
    result.rows.push_back(row);
  }
  return result;
}

// The columns every row of a point shares: its configuration.
ob::SummaryRow base_row(const Config& config, const BucketPlan& plan, int ranks) {
  ob::SummaryRow base;
  base.ranks = ranks;
  base.chunks = config.chunks;
  base.iters = config.common.iters;
  const bool caps = config.chunks == 0 && config.plan_ends.empty();
  base.config("hidden", config.hidden)
      .config("layers", config.layers)
      .config("batch", config.batch)
      .config("bucket_mb", caps ? config.bucket_mb : std::nan(""))
      .config("first_bucket_mb", caps ? config.first_bucket_mb : std::nan(""))
      .config("buckets", plan.buckets.size())
      .config("grad_mb", config.grad_mb())
      .config("tf32", config.tf32)
      .config("comm_priority", name(config.comm_priority))
      .config("nccl_max_ctas", config.nccl_max_ctas)
      .config("nccl_min_ctas", config.nccl_min_ctas)
      .config("nccl_cta_policy", name(config.nccl_settings().cta_policy))
      .config("transport", name(config.transport))
      .config("nodes", config.emulate_nodes)
      .config("comm_dtype", name(config.comm_dtype))
      .config("accum_steps", config.accum_steps)
      .config("graph", config.graph)
      .config("sync", config.sync)
      .config("gemm_sm_margin", config.gemm_sm_margin);
  for (const auto& [column, value] : knob_columns(config.knobs)) base.config(column, value);
  base.config("plan", name(config.plan_mode)).config("clock", "cuda_event").config("model_family", config.family);
  const FamilyRow& family = config.family_row();  // hidden is its width, layers its steps, batch its rows per rank
  if (family.columns) {
    for (const auto& [key, value] : family.columns(config.model_spec())) base.config(key, value);
  }
  return base;
}

// One mode's row from its run (slowest rank's times), with the bandwidth, energy and check columns where they apply.
ob::SummaryRow mode_row(const Config& config, const ob::SummaryRow& base, const ModeRun& run, double wire_bytes,
                        std::uint64_t wrong, MPI_Comm comm) {
  ob::ModeSamples samples{run.mode, run.iter_ms, comm, wire_bytes};
  if (run.mode == ob::Mode::kComm && config.common.check) samples.wrong = wrong;
  return ob::mode_row(base, samples, [&](ob::SummaryRow& row) {
    if (run.mode != ob::Mode::kComm) row.set("backward_ms_p50", ob::slowest_median(run.backward_total_ms, comm));
    if (!run.marked_ms.empty()) {
      row.set("marks_slowdown", ob::slowest_median(run.marked_ms, comm) / ob::slowest_median(run.iter_ms, comm) - 1);
    }
    if (run.mode != ob::Mode::kCompute) {
      row.set("enqueue_ms_p50", ob::slowest_median(run.enqueue_ms, comm))
          .set("enqueue_span_ms_p50", ob::slowest_median(run.enqueue_span_ms, comm));
    }
    if (config.power) {  // the job's energy (every GPU) per timed iteration, and the mean power of one GPU
      const double joules = ob::sum_across_ranks({run.energy_j}, comm)[0];
      const double seconds = ob::max_across_ranks({run.timed_s}, comm)[0];
      row.set("energy_j_per_iter", joules / static_cast<double>(run.iter_ms.size()))
          .set("power_w_avg", joules / seconds / base.ranks);
    }
  });
}

// bound and bound_ref from the compute-only and comm-only runs (neither when one of them did not run). bound_ref:
// the same schedule with each task's fastest isolated communication, this strategy's or its reference's on NCCL's
// own kernels (the row's reference: nccl, or sharded for sharded-ce).
ob::OverlapInputs bound_inputs(const Config& config, Trainer& trainer, const BucketPlan& plan,
                               const std::vector<ModeRun>& runs, const std::vector<ob::SummaryRow>& rows, MPI_Comm comm,
                               ob::SteadyClock::time_point origin, std::ostream* progress) {
  ob::OverlapInputs inputs;
  inputs.compute_time_field = "backward_ms_p50";
  const ModeRun* compute = nullptr;
  const ModeRun* comm_run = nullptr;
  for (const auto& run : runs) {
    if (run.mode == ob::Mode::kCompute) compute = &run;
    if (run.mode == ob::Mode::kComm) comm_run = &run;
  }
  if (!compute || !comm_run) return inputs;
  const double t_comp = ob::find_row(rows, ob::Mode::kCompute)->time_ms.p50;
  const double t_comm = ob::find_row(rows, ob::Mode::kComm)->time_ms.p50;
  // The parts at the timed steps' pace (at_timed_pace): a bound above the step it bounds would be no bound.
  const ModeRun compute_parts = at_timed_pace(*compute);
  const auto own = comm_medians(at_timed_pace(*comm_run), comm);
  inputs.bound_ms = bound_from(config, trainer, plan, compute_parts, own, t_comp, t_comm, comm);
  auto fastest = own;
  double t_comm_ref = t_comm;
  const std::string comm_ref = config.comm_reference();
  if (config.sync != comm_ref) {
    if (progress) {
      *progress << "phase4: " << config.point_label() << ": comm of --sync " << comm_ref << " (bound_ref)" << std::endl;
    }
    const auto reference = trainer.run_comm_with(comm_ref, plan, origin);
    fastest = fastest_of(own, comm_medians(at_timed_pace(reference), comm));
    t_comm_ref = std::min(t_comm, ob::summarize(ob::max_across_ranks(reference.iter_ms, comm)).p50);
  }
  inputs.bound_ref_ms = bound_from(config, trainer, plan, compute_parts, fastest, t_comp, t_comm_ref, comm);
  return inputs;
}

}  // namespace

std::vector<ob::ConsoleColumn> console_columns(const Config& config) {
  if (config.mode == RunMode::kInterference) {
    return {{"msg", "MiB", "msg_mb"},        {"gemm alone", "ms", "gemm_ms"},  {"slowdown", "", "compute_slowdown"},
            {"comm alone", "ms", "comm_ms"}, {"stretch", "x", "comm_stretch"}, {"busbw", "GB/s", "busbw_GBps"},
            {"covered", "", "covered"}};
  }
  return {{"buckets", "", "buckets"},
          {"speedup", "x", "speedup"},
          {"efficiency", "", "overlap_efficiency"},
          {"hidden", "%", "overlap_pct"},
          {"slowdown", "", "compute_slowdown"},
          {"busbw", "GB/s", "busbw_GBps"},
          {"predicted", "ms", "predicted_ms"},
          {"#wrong", "", "wrong"}};
}

PointResult run_point(const Config& config, Trainer& trainer, MPI_Comm comm, ob::SteadyClock::time_point origin,
                      std::ostream* progress, const Calibration* calibration) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  const BucketPlan plan = trainer.adapt(config.plan());
  validate_plan(plan, config.layout());
  const ob::SummaryRow base = base_row(config, plan, ranks);
  if (config.mode == RunMode::kInterference) return interference_point(config, trainer, base, comm, progress);
  const StrategyCalibration* calibrated = calibration ? calibration->strategy(config.sync) : nullptr;

  ob::SummaryRow equivalence;
  ob::CheckLog checks;
  if (config.common.check) {
    if (progress) *progress << "phase4: " << config.point_label() << ": checks" << std::endl;
    checks.fail(check_point(config, trainer, plan, comm, rank, ranks, origin, equivalence));
  }
  PointResult result;
  const auto modes = config.modes();
  const auto runs =
      run_passes(trainer, plan, modes, config.passes, config.common.check, origin, [&](ob::Mode mode, int pass) {
        if (!progress) return;
        *progress << "phase4: " << config.point_label() << ": " << ob::mode_name(mode)
                  << pass_label(pass, config.passes) << std::endl;
      });
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const ob::Mode mode = modes[m];
    const ModeRun& run = runs[m];
    const std::uint64_t wrong = ob::total_across_ranks(run.wrong, comm);
    checks.mode_checks(mode, run.ranks_agree, wrong, run.first_wrong);
    ob::SummaryRow row = mode_row(config, base, run, trainer.wire_bytes(), wrong, comm);
    if (mode == ob::Mode::kOverlap && calibrated) {
      const Prediction prediction = predict(*calibration, *calibrated, plan);
      row.set("predicted_ms", prediction.step_ms).set("predicted_extrapolated", prediction.extrapolated);
    }
    // The checks' columns go on the overlap row, or on the only row when a single other mode runs.
    if (mode == ob::Mode::kOverlap || modes.size() == 1) {
      for (const auto& field : equivalence.fields) row.set(field.key, field.value);
    }
    result.rows.push_back(row);
    const auto merged = ob::gather_timeline(run.events, comm);
    result.events.insert(result.events.end(), merged.begin(), merged.end());
  }
  trainer.reset_weights();
  result.failure = checks.first();
  ob::derive_overlap_rows(result.rows, base,
                          bound_inputs(config, trainer, plan, runs, result.rows, comm, origin, progress));
  label_bounds(result.rows, sync_row(config.sync).bounded, progress);
  return result;
}

}  // namespace phase4
