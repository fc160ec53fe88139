#include "phase2_omp_overlap/runner.hpp"

#include <omp.h>

#include <limits>

#include "common/metrics.hpp"
#include "common/overlap_rows.hpp"

namespace phase2 {
namespace {

const ModeRun* find(const std::vector<ModeRun>& runs, ob::Mode mode) {
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
  row.config("workload", config.workload)
      .config("threads", config.compute_threads() + 1)
      .config("compute_threads", config.compute_threads());
  if (config.workload == "synthetic") {
    row.config("compute_ms", config.compute_ms).config("comm_ms", config.comm_ms).config("jitter", config.jitter);
  } else {
    row.config("chunk_rows", config.chunk_rows)
        .config("hidden", config.hidden)
        .config("virtual_ranks", config.virtual_ranks);
  }
  row.config("clock", "steady_clock");
  return row;
}

double median_or_nan(const std::vector<double>& samples) {
  return samples.empty() ? std::numeric_limits<double>::quiet_NaN() : ob::summarize(samples).p50;
}

}  // namespace

std::vector<ob::ConsoleColumn> console_columns() {
  return {{"chunk_compute", "ms", "chunk_compute_ms_p50"},
          {"chunk_comm", "ms", "chunk_comm_ms_p50"},
          {"speedup", "x", "speedup"},
          {"efficiency", "", "overlap_efficiency"},
          {"overlap", "%", "overlap_pct"},
          {"slowdown", "", "compute_slowdown"},
          {"#wrong", "", "wrong"}};
}

Result run(const Config& config, std::ostream* progress) {
  omp_set_max_active_levels(2);  // the overlapped mode nests the compute team inside a section
  Result result;
  auto workload = make_workload(config);
  const auto origin = ob::SteadyClock::now();
  for (const auto mode : config.modes()) {
    if (progress)
      *progress << "phase2: running " << ob::mode_name(mode) << " (" << config.common.warmup << " warm-up + "
                << config.common.iters << " iterations)" << std::endl;
    result.runs.push_back(run_mode(mode, *workload, config, origin, config.common.check));
    const auto& run = result.runs.back();
    result.events.insert(result.events.end(), run.events.begin(), run.events.end());
    if (run.wrong > 0 && result.wrong == 0)
      result.first_wrong = std::string(ob::mode_name(mode)) + ": " + run.first_wrong;
    result.wrong += run.wrong;
  }

  const ob::SummaryRow base = base_row(config);
  for (const auto& run : result.runs) {
    ob::ModeSamples samples{run.mode, run.iter_ms};
    if (config.workload == "real") samples.wrong = run.wrong;
    result.rows.push_back(ob::mode_row(base, samples, [&](ob::SummaryRow& row) {
      row.set("chunk_compute_ms_p50", median_or_nan(run.compute_task_ms))
          .set("chunk_comm_ms_p50", median_or_nan(run.comm_task_ms))
          .set("compute_total_ms_p50", median_or_nan(run.compute_total_ms));
    }));
  }

  // The bound: the pipeline model. Synthetic: the nominal durations (the model the issue states); real: the
  // median isolated chunk durations.
  ob::OverlapInputs inputs;
  inputs.compute_time_field = "compute_total_ms_p50";
  const ModeRun* compute = find(result.runs, ob::Mode::kCompute);
  const ModeRun* comm = find(result.runs, ob::Mode::kComm);
  if (config.workload == "synthetic") {
    inputs.bound_ms = ob::equal_chunk_pipeline_ms(config.chunks, config.compute_ms, config.comm_ms);
  } else if (compute && comm) {
    inputs.bound_ms = ob::equal_chunk_pipeline_ms(config.chunks, median_or_nan(compute->compute_task_ms),
                                                  median_or_nan(comm->comm_task_ms));
  }
  ob::derive_overlap_rows(result.rows, base, inputs);
  return result;
}

}  // namespace phase2
