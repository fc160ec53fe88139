#include "phase4_chunked_nccl/runner.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/metrics.hpp"
#include "common/mpi_check.hpp"
#include "common/stats.hpp"
#include "common/verify.hpp"

namespace phase4 {
namespace {


// seq and overlap launch the same reductions in the same order on the same data: their weights after the same
// steps are compared, bitwise and by relative norm (the assertion is <= 1e-6).
std::string check_overlap_matches_seq(const Config& config, Trainer& trainer, const BucketPlan& plan, MPI_Comm comm,
                                      ob::SteadyClock::time_point origin, ob::SummaryRow& row) {
  trainer.reset_weights();
  const auto seq = trainer.run("seq", plan, true, origin, kEquivalenceSteps);
  const auto w_seq = trainer.download_weights();
  trainer.reset_weights();
  const auto overlap = trainer.run("overlap", plan, true, origin, kEquivalenceSteps);
  const auto w_overlap = trainer.download_weights();
  trainer.reset_weights();
  const std::vector<double> reference(w_seq.begin(), w_seq.end());
  const auto check = ob::compare_relative(w_overlap.data(), reference.data(), reference.size());
  int bitwise = std::memcmp(w_seq.data(), w_overlap.data(), w_seq.size() * sizeof(float)) == 0;
  int all_bitwise = 0;
  MPI_CHECK(MPI_Allreduce(&bitwise, &all_bitwise, 1, MPI_INT, MPI_MIN, comm));
  const double rel = ob::max_across_ranks({check.finite ? check.rel_error : INFINITY}, comm)[0];
  row.set("overlap_vs_seq_bitwise", all_bitwise == 1).set("overlap_vs_seq_rel_error", rel);
  if (!seq.ranks_agree || !overlap.ranks_agree) return "weights differ between ranks after a step";
  if (!(rel <= 1e-6)) {
    return "overlap weights differ from seq weights after " + std::to_string(kEquivalenceSteps) + " steps: " +
           check.describe(1e-6);
  }
  return "";
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
      .set("nccl_min_ctas", config.nccl_min_ctas).set("clock", "cuda_event");

  ob::SummaryRow equivalence;
  if (config.common.check) {
    if (progress) *progress << "phase4: " << config.point_label() << ": checking overlap against seq" << std::endl;
    result.failure = check_overlap_matches_seq(config, trainer, plan, comm, origin, equivalence);
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
    if (mode == "comm") {
      const double algbw = ob::algbw_GBps(4.0 * plan.elements, row.time_ms.p50);
      row.set("algbw_GBps", algbw).set("busbw_GBps", ob::allreduce_busbw_GBps(algbw, ranks));
      if (config.common.check) row.set("wrong", wrong);
    }
    if (mode == "overlap") {
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
