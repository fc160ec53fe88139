#include "phase4_chunked_nccl/runner.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/csv_writer.hpp"
#include "common/metrics.hpp"
#include "common/mpi_check.hpp"
#include "common/stats.hpp"
#include "common/verify.hpp"
#include "common/watchdog.hpp"

namespace phase4 {
namespace {


// Weights after kEquivalenceSteps steps from the initial weights (eager unless `graph`).
std::vector<float> weights_after(Trainer& trainer, const std::string& mode, const BucketPlan& plan,
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
//  - --accum-steps K: K micro-steps against one step on the K-times batch (fp32 tolerance, 1e-5).
std::string check_point(const Config& config, Trainer& trainer, const BucketPlan& plan, MPI_Comm comm, int rank,
                        int ranks, ob::SteadyClock::time_point origin, ob::SummaryRow& row) {
  bool agree = true;
  std::string failure;
  auto first = [&](const std::string& found) {
    if (failure.empty()) failure = found;
  };
  const auto seq = weights_after(trainer, "seq", plan, origin, true, &agree);
  const auto overlap = weights_after(trainer, "overlap", plan, origin, false, &agree);
  first(compare_weights(overlap, seq, 1e-6, "overlap weights differ from seq weights", "overlap_vs_seq", comm, row));
  if (config.graph) {
    const auto replayed = weights_after(trainer, "seq", plan, origin, false, &agree);
    first(compare_weights(replayed, seq, 0.0, "graph replay differs from eager execution", "graph_vs_eager", comm,
                          row));
  }
  if (config.comm_dtype == "bf16") {
    ob::progress_note("the bf16 gradient check");
    const double error = ob::max_across_ranks({trainer.comm_gradient_error(plan)}, comm)[0];
    trainer.reset_weights();
    row.set("comm_grad_rel_error", error);
    if (!(error <= kBf16GradientTolerance)) {
      first("bf16 communication: gradient relative error " + ob::format_number(error) + " above " +
            ob::format_number(kBf16GradientTolerance));
    }
  }
  if (config.accum_steps > 1) {
    ob::progress_note("the accumulation check");
    const Config big = config.accumulation_reference();
    Trainer reference(big, rank, ranks, trainer.comm(), comm);
    const auto want = weights_after(reference, "seq", plan, origin, true, &agree);
    first(compare_weights(seq, want, 1e-5,
                          std::to_string(config.accum_steps) + " micro-steps differ from one step on the " +
                              std::to_string(config.accum_steps) + "-times batch",
                          "accum_vs_big_batch", comm, row));
  }
  if (!agree) return "weights differ between ranks after a step";
  return failure;
}

}  // namespace

std::vector<ob::ConsoleColumn> console_columns() {
  return {{"buckets", "", "buckets"},     {"speedup", "x", "speedup"},          {"efficiency", "", "overlap_efficiency"},
          {"hidden", "%", "overlap_pct"}, {"slowdown", "", "compute_slowdown"}, {"busbw", "GB/s", "busbw_GBps"},
          {"#wrong", "", "wrong"}};
}

PointResult run_point(const Config& config, Trainer& trainer, MPI_Comm comm, ob::SteadyClock::time_point origin,
                      std::ostream* progress) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  const BucketPlan plan = config.plan();
  validate_plan(plan, config.layers, config.hidden);
  PointResult result;

  ob::SummaryRow base;
  base.ranks = ranks;
  base.chunks = config.chunks;
  base.iters = config.common.iters;
  base.set("hidden", config.hidden).set("layers", config.layers).set("batch", config.batch)
      .set("bucket_mb", config.chunks > 0 ? std::nan("") : config.bucket_mb)
      .set("first_bucket_mb", config.chunks > 0 ? std::nan("") : config.first_bucket_mb)
      .set("buckets", plan.buckets.size()).set("grad_mb", config.grad_mb()).set("tf32", config.tf32)
      .set("comm_priority", config.comm_priority).set("nccl_max_ctas", config.nccl_max_ctas)
      .set("nccl_min_ctas", config.nccl_min_ctas).set("nccl_cta_policy", config.nccl_cta_policy)
      .set("comm_dtype", config.comm_dtype)
      .set("accum_steps", config.accum_steps).set("graph", config.graph).set("clock", "cuda_event");

  ob::SummaryRow equivalence;
  if (config.common.check) {
    if (progress) *progress << "phase4: " << config.point_label() << ": checks" << std::endl;
    result.failure = check_point(config, trainer, plan, comm, rank, ranks, origin, equivalence);
  }

  std::vector<ModeRun> runs;
  for (const auto& mode : config.modes()) {
    if (progress) *progress << "phase4: " << config.point_label() << ": " << mode << std::endl;
    trainer.reset_weights();
    runs.push_back(trainer.run(mode, plan, config.common.check, origin));
    const ModeRun& run = runs.back();
    if (!run.ranks_agree && result.failure.empty()) result.failure = mode + ": weights differ between ranks";
    const std::uint64_t wrong = ob::total_across_ranks(run.wrong, comm);
    if (wrong > 0 && result.failure.empty()) {
      result.failure = "comm: " + std::to_string(wrong) + " elements of the all-reduced pattern are wrong (" +
                       run.first_wrong + ")";
    }
    ob::SummaryRow row = base;
    row.mode = mode;
    row.time_ms = ob::summarize(ob::max_across_ranks(run.iter_ms, comm));
    if (mode != "comm") row.set("backward_ms_p50", ob::slowest_median(run.backward_total_ms, comm));
    if (config.power) {  // the job's energy (every GPU) per timed iteration, and the mean power of one GPU
      const double joules = ob::sum_across_ranks({run.energy_j}, comm)[0];
      const double seconds = ob::max_across_ranks({run.timed_s}, comm)[0];
      row.set("energy_j_per_iter", joules / config.common.iters).set("power_w_avg", joules / seconds / ranks);
    }
    if (mode == "comm") {
      const double bytes = (config.comm_dtype == "bf16" ? 2.0 : 4.0) * plan.elements;  // as it travels
      const double algbw = ob::algbw_GBps(bytes, row.time_ms.p50);
      row.set("algbw_GBps", algbw).set("busbw_GBps", ob::allreduce_busbw_GBps(algbw, ranks));
      if (config.common.check) row.set("wrong", wrong);
    }
    // The checks' columns go on the overlap row, or on the only row when a single other mode runs.
    if (mode == "overlap" || config.modes().size() == 1) {
      for (const auto& field : equivalence.fields) row.set(field.first, field.second);
    }
    result.rows.push_back(row);
    const auto merged = ob::gather_timeline(run.events, comm);
    result.events.insert(result.events.end(), merged.begin(), merged.end());
  }
  trainer.reset_weights();

  auto find_run = [&](const std::string& mode) -> const ModeRun* {
    for (const auto& run : runs) {
      if (run.mode == mode) return &run;
    }
    return nullptr;
  };
  auto find_row = [&](const std::string& mode) -> ob::SummaryRow* {
    for (auto& row : result.rows) {
      if (row.mode == mode) return &row;
    }
    return nullptr;
  };
  const ModeRun* compute = find_run("compute");
  const ModeRun* comm_run = find_run("comm");
  if (compute && comm_run) {
    const double t_comp = find_row("compute")->time_ms.p50, t_comm = find_row("comm")->time_ms.p50;
    const double t_seq = find_row("seq") ? find_row("seq")->time_ms.p50 : t_comp + t_comm;
    if (ob::SummaryRow* overlap = find_row("overlap")) {
      ob::set_overlap_metrics(*overlap, t_seq, t_comp, t_comm);
      overlap->set("compute_slowdown",
                   ob::compute_slowdown(std::stod(overlap->get("backward_ms_p50")),
                                        std::stod(find_row("compute")->get("backward_ms_p50"))));
    }
    result.rows.push_back(ob::derived_row("ideal", ob::ideal_ms(t_comp, t_comm), base));
    std::vector<double> steps, buckets;
    std::vector<int> ready;
    for (int s = 0; s < config.layers; ++s) steps.push_back(ob::slowest_median(compute->step_ms[s], comm));
    for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
      buckets.push_back(ob::slowest_median(comm_run->bucket_ms[b], comm));
      ready.push_back(plan.buckets[b].ready_after);
    }
    const double bound = ob::schedule_bound_ms(ob::slowest_median(compute->forward_ms, comm), steps, buckets, ready,
                                               ob::slowest_median(compute->update_ms, comm), t_comp, t_comm);
    result.rows.push_back(ob::derived_row("bound", bound, base));
  }
  return result;
}

}  // namespace phase4
