#include "phase2_omp_overlap/runner.hpp"

#include <omp.h>

#include "common/metrics.hpp"

namespace phase2 {
namespace {

const ModeRun* find(const std::vector<ModeRun>& runs, const std::string& mode) {
  for (const auto& run : runs) {
    if (run.mode == mode) return &run;
  }
  return nullptr;
}

ob::SummaryRow base_row(const Config& config) {
  ob::SummaryRow row;
  row.ranks = 1;
  row.chunks = config.chunks;
  row.iters = config.common.iters;
  row.set("workload", config.workload)
      .set("threads", config.compute_threads() + 1)
      .set("compute_threads", config.compute_threads());
  if (config.workload == "synthetic") {
    row.set("compute_ms", config.compute_ms).set("comm_ms", config.comm_ms).set("jitter", config.jitter);
  } else {
    row.set("chunk_rows", config.chunk_rows).set("hidden", config.hidden).set("virtual_ranks", config.virtual_ranks);
  }
  row.set("clock", "steady_clock");
  return row;
}

double median_or_nan(const std::vector<double>& samples) {
  return samples.empty() ? std::numeric_limits<double>::quiet_NaN() : ob::summarize(samples).p50;
}

}  // namespace

std::vector<ob::ConsoleColumn> console_columns() {
  return {{"chunk_compute", "ms", "chunk_compute_ms_p50"}, {"chunk_comm", "ms", "chunk_comm_ms_p50"},
          {"speedup", "x", "speedup"},                     {"efficiency", "", "overlap_efficiency"},
          {"overlap", "%", "overlap_pct"},                 {"slowdown", "", "compute_slowdown"},
          {"#wrong", "", "wrong"}};
}

Result run(const Config& config, std::ostream* progress) {
  omp_set_max_active_levels(2);  // the overlapped mode nests the compute team inside a section
  Result result;
  auto workload = make_workload(config);
  const auto origin = ob::SteadyClock::now();
  for (const auto& mode : config.modes()) {
    if (progress) *progress << "phase2: running " << mode << " (" << config.common.warmup << " warm-up + "
                            << config.common.iters << " iterations)" << std::endl;
    result.runs.push_back(run_mode(mode, *workload, config, origin, config.common.check));
    const auto& run = result.runs.back();
    result.events.insert(result.events.end(), run.events.begin(), run.events.end());
    if (run.wrong > 0 && result.wrong == 0) result.first_wrong = mode + ": " + run.first_wrong;
    result.wrong += run.wrong;
  }

  const ob::SummaryRow base = base_row(config);
  for (const auto& run : result.runs) {
    ob::SummaryRow row = base;
    row.mode = run.mode;
    row.time_ms = ob::summarize(run.iter_ms);
    row.set("chunk_compute_ms_p50", median_or_nan(run.compute_task_ms))
        .set("chunk_comm_ms_p50", median_or_nan(run.comm_task_ms))
        .set("compute_total_ms_p50", median_or_nan(run.compute_total_ms));
    if (config.workload == "real") row.set("wrong", run.wrong);
    result.rows.push_back(row);
  }

  const ModeRun* seq = find(result.runs, "seq");
  const ModeRun* compute = find(result.runs, "compute");
  const ModeRun* comm = find(result.runs, "comm");
  if (compute && comm) {
    const double t_comp = ob::summarize(compute->iter_ms).p50;
    const double t_comm = ob::summarize(comm->iter_ms).p50;
    for (auto& row : result.rows) {
      if (row.mode != "overlap") continue;
      const double t_seq = seq ? ob::summarize(seq->iter_ms).p50 : t_comp + t_comm;
      ob::set_overlap_metrics(row, t_seq, t_comp, t_comm);
      const auto* overlap = find(result.runs, "overlap");
      row.set("compute_slowdown", ob::compute_slowdown(ob::summarize(overlap->compute_total_ms).p50,
                                                       ob::summarize(compute->compute_total_ms).p50));
    }
    result.rows.push_back(ob::derived_row("ideal", ob::ideal_ms(t_comp, t_comm), base));
    // The bound: the pipeline model. Synthetic: the nominal durations (the model the issue states); real: the
    // median isolated chunk durations.
    const double c = config.workload == "synthetic" ? config.compute_ms : median_or_nan(compute->compute_task_ms);
    const double m = config.workload == "synthetic" ? config.comm_ms : median_or_nan(comm->comm_task_ms);
    result.rows.push_back(ob::derived_row("bound", ob::equal_chunk_pipeline_ms(config.chunks, c, m), base));
  } else if (config.workload == "synthetic") {
    result.rows.push_back(
        ob::derived_row("bound", ob::equal_chunk_pipeline_ms(config.chunks, config.compute_ms, config.comm_ms), base));
  }
  return result;
}

}  // namespace phase2
