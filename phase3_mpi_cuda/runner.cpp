#include "phase3_mpi_cuda/runner.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/csv_writer.hpp"
#include "common/options.hpp"
#include "common/metrics.hpp"
#include "common/overlap_rows.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/stats.hpp"
#include "common/verify.hpp"
#include "phase3_mpi_cuda/reference.hpp"
#include "phase3_mpi_cuda/strategies.hpp"

namespace phase3 {
namespace {

// Checks each strategy against the single-process reference: kReferenceSteps steps from the initial weights.
std::string check_against_reference(const Config& config, Backend& backend, MPI_Comm comm,
                                    ob::SteadyClock::time_point origin, int rank) {
  std::vector<double> reference;
  if (rank == 0) {
    ob::progress_note("the single-process reference");
    reference = reference_weights(config, kReferenceSteps);
  }
  const auto w0 = make_shard(config, {0, 0}).w0;
  ob::CheckLog checks;
  for (const auto mode : config.modes()) {
    if (mode != ob::Mode::kSeq && !ob::is_overlapped(mode)) continue;  // the strategies, which train
    const std::string name = ob::mode_name(mode);
    backend.set_weights(w0);
    const auto run = run_mode(mode, backend, config, comm, origin, true, kReferenceSteps);
    if (!run.ranks_agree) checks.fail(name + ": weights differ between ranks after a step");
    int ok = 1;
    std::string detail;
    if (rank == 0) {
      const auto w = backend.weights();
      const auto check = ob::compare_relative(w.data(), reference.data(), w.size());
      ok = check.passes(1e-5);
      detail = check.describe(1e-5);
    }
    MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
    if (!ok) {
      checks.fail(name + ": weights after " + std::to_string(kReferenceSteps) +
                  " steps differ from the single-process run" + (rank == 0 ? " (" + detail + ")" : ""));
    }
  }
  backend.set_weights(w0);
  return checks.first();
}

// With `batch` rows: the comm-only step's median (slowest rank), or the compute-only run's backward chunks, the part
// of the step that communication can hide behind (sum of the chunks' medians, slowest rank).
double measured_ms(const Config& config, int batch, ob::Mode mode, const BackendFactory& make, MPI_Comm comm) {
  Config trial = config;
  trial.batch = batch;
  trial.common.warmup = 2;
  trial.common.iters = 5;
  auto backend = make(trial);
  const auto run = run_mode(mode, *backend, trial, comm, ob::SteadyClock::now(), false);
  if (mode == ob::Mode::kComm) return ob::summarize(ob::max_across_ranks(run.iter_ms, comm)).p50;
  double chunks = 0;
  for (const auto& samples : run.chunk_compute_ms) chunks += ob::slowest_median(samples, comm);
  return chunks;
}

// The configuration columns every row of the run shares.
ob::SummaryRow base_row(const Config& config, const std::string& device_name, int ranks) {
  ob::SummaryRow base;
  base.ranks = ranks;
  base.chunks = config.chunks;
  base.iters = config.common.iters;
  base.config("batch", config.batch)
      .config("in", config.in)
      .config("out", config.out)
      .config("device", device_name)
      .config("compute", config.compute)
      .config("kernel",
              config.busy()              ? "busy_loop"
                  : device_name == "cpu" ? "cpu_gemm"
                                         : config.kernel)
      .config("cuda_aware", config.cuda_aware)
      .config("compute_threads", config.compute_threads())
      .config("probes", config.probes)
      .config("backoff_us", config.backoff_us)
      .config("progress_core",
              config.compute_threads() < rank_cores() ? "own"
                  : compute_can_yield()               ? "shared-first"
                                                      : "shared")
      .config("grad_mb", 4.0 * config.in * config.out / (1 << 20))
      .config("clock", "steady_clock");
  return base;
}

// One mode's summary row: the slowest rank's step times, its chunks' medians, comm's bandwidth, the exact
// check's count.
ob::SummaryRow mode_row(const ob::SummaryRow& base, const ModeRun& run, ob::Mode mode, const Config& config,
                        const Backend& backend, std::uint64_t wrong, MPI_Comm comm) {
  std::vector<double> compute_tasks, comm_tasks;
  for (int k = 0; k < config.chunks; ++k) {
    compute_tasks.insert(compute_tasks.end(), run.chunk_compute_ms[k].begin(), run.chunk_compute_ms[k].end());
    comm_tasks.insert(comm_tasks.end(), run.chunk_comm_ms[k].begin(), run.chunk_comm_ms[k].end());
  }
  ob::ModeSamples samples{mode, run.iter_ms, comm, 4.0 * config.in * config.out};
  const bool exact = (mode == ob::Mode::kComm || !backend.trains()) && mode != ob::Mode::kCompute;
  if (config.common.check && exact) samples.wrong = wrong;
  return ob::mode_row(base, samples, [&](ob::SummaryRow& row) {
    if (mode != ob::Mode::kComm) row.set("chunk_compute_ms_p50", ob::slowest_median(compute_tasks, comm));
    if (mode != ob::Mode::kCompute) row.set("chunk_comm_ms_p50", ob::slowest_median(comm_tasks, comm));
    row.set("compute_total_ms_p50", ob::slowest_median(run.compute_total_ms, comm));
  });
}

}  // namespace

int rows_for_time(double target_ms, int b0, double t0, int b1, double t1) {
  const double slope = (t1 - t0) / (b1 - b0);
  const double rows = slope > 0 ? b1 + (target_ms - t1) / slope : b1 * target_ms / t1;
  return static_cast<int>(std::min(std::max(std::ceil(rows), 1.0), 2147483647.0));
}

int batch_for_comm(const Config& config, const BackendFactory& make, MPI_Comm comm, std::ostream* progress) {
  int ranks = 1;
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  const double comm_ms = measured_ms(config, ranks, ob::Mode::kComm, make, comm);
  // Secant steps on (rows, backward time) from two small batches, until it is within 10 % of the comm.
  int b0 = 64 * ranks, b1 = 512 * ranks;
  double t0 = measured_ms(config, b0, ob::Mode::kCompute, make, comm),
         t1 = measured_ms(config, b1, ob::Mode::kCompute, make, comm);
  for (int attempt = 0; attempt < 4 && std::abs(t1 - comm_ms) > 0.1 * comm_ms; ++attempt) {
    // Rounded up to whole rows per rank in 64 bits: rows_for_time may answer INT_MAX.
    const long long wanted = rows_for_time(comm_ms, b0, t0, b1, t1);
    const long long rounded = ranks * ((wanted + ranks - 1) / ranks);
    ob::require(rounded <= kMaxBatch, "--batch", "auto",
                "compute as long as the all-reduce (" + ob::format_number(comm_ms, 3) + " ms) needs " +
                    std::to_string(rounded) + " rows; at most " + std::to_string(kMaxBatch));
    const int rows = static_cast<int>(rounded);
    Config sized = config;
    sized.batch = rows;
    ob::require_fits_in_host_memory("--batch", "auto (" + std::to_string(rows) + " rows)", sized.host_bytes());
    if (rows == b1) break;
    b0 = b1, t0 = t1;
    b1 = rows, t1 = measured_ms(config, rows, ob::Mode::kCompute, make, comm);
  }
  // Noise on a loaded machine can send the secant far below (a slow small batch makes the slope look flat): from
  // there, double the rows until the chunks reach the all-reduce (their time grows with the rows), within the cap.
  while (t1 < 0.5 * comm_ms && 2LL * b1 <= kMaxBatch) {
    Config sized = config;
    sized.batch = 2 * b1;
    ob::require_fits_in_host_memory("--batch", "auto (" + std::to_string(sized.batch) + " rows)", sized.host_bytes());
    b1 = sized.batch, t1 = measured_ms(config, b1, ob::Mode::kCompute, make, comm);
  }
  // A compute that does not grow with its rows (or noise that hides how it grows) never reaches the all-reduce: say
  // so rather than run a batch that matches nothing. (One that stays longer even at a few rows, its fixed cost above
  // the all-reduce, is as close as it gets: kept.)
  ob::require(t1 >= 0.5 * comm_ms, "--batch", "auto",
              "the backward chunks took " + ob::format_number(t1, 3) + " ms at " + std::to_string(b1) +
                  " rows at the end of its search, short of the all-reduce's " + ob::format_number(comm_ms, 3) +
                  " ms; give --batch ROWS");
  if (progress) {
    *progress << "phase3: --batch auto: " << b1 << " rows: backward chunks " << ob::format_number(t1, 3)
              << " ms, all-reduce " << ob::format_number(comm_ms, 3) << " ms" << std::endl;
  }
  return b1;
}

std::vector<ob::ConsoleColumn> console_columns() {
  return {{"grad", "MiB", "grad_mb"},
          {"batch", "", "batch"},
          {"chunk_compute", "ms", "chunk_compute_ms_p50"},
          {"chunk_comm", "ms", "chunk_comm_ms_p50"},
          {"speedup", "x", "speedup"},
          {"efficiency", "", "overlap_efficiency"},
          {"overlap", "%", "overlap_pct"},
          {"slowdown", "", "compute_slowdown"},
          {"busbw", "GB/s", "busbw_GBps"},
          {"#wrong", "", "wrong"}};
}

Result run(const Config& config, Backend& backend, const std::string& device_name, MPI_Comm comm,
           std::ostream* progress, std::optional<ob::SteadyClock::time_point> start) {
  omp_set_max_active_levels(2);  // the thread strategy nests the compute team inside a section
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  Result result;
  if (!start) {
    MPI_CHECK(MPI_Barrier(comm));
    start = ob::SteadyClock::now();
  }
  const auto origin = *start;

  if (config.common.check && backend.trains()) {
    if (progress) *progress << "phase3: checking every strategy against the single-process run" << std::endl;
    result.failure = check_against_reference(config, backend, comm, origin, rank);
  }

  const ob::SummaryRow base = base_row(config, device_name, ranks);

  ob::CheckLog checks;
  checks.fail(result.failure);
  const ModeRun* compute_run = nullptr;
  const ModeRun* comm_run = nullptr;
  std::vector<ModeRun> runs;
  runs.reserve(config.modes().size());
  const auto w0 = make_shard(config, {0, 0}).w0;
  for (const auto mode : config.modes()) {
    if (progress) *progress << "phase3: running " << ob::mode_name(mode) << std::endl;
    // Every mode from the initial weights: the compute-only mode updates with this rank's own gradient.
    backend.set_weights(w0);
    runs.push_back(run_mode(mode, backend, config, comm, origin, config.common.check));
    const auto& run = runs.back();
    const std::uint64_t wrong = ob::total_across_ranks(run.wrong, comm);
    checks.mode_checks(
        mode, run.ranks_agree, wrong,
        ob::first_nonempty(run.first_wrong.empty() ? "" : "rank " + std::to_string(rank) + ": " + run.first_wrong,
                           comm));
    if (mode == ob::Mode::kCompute) compute_run = &run;
    if (mode == ob::Mode::kComm) {
      comm_run = &run;
      std::vector<double> chunk_ms;
      for (const auto& samples : run.chunk_comm_ms) chunk_ms.push_back(ob::slowest_median(samples, comm));
      backend.size_to_comm(chunk_ms);
    }
    result.rows.push_back(mode_row(base, run, mode, config, backend, wrong, comm));
    auto merged = ob::gather_timeline(run.events, comm);
    result.events.insert(result.events.end(), merged.begin(), merged.end());
  }
  result.failure = checks.first();

  // Schedule bound: forward, the chunks' isolated medians through the pipeline, then the update; each rank's own
  // compute medians and the collectives' own time, the slowest rank's bound (ob::fastest_median).
  std::vector<double> compute, comm_ms;
  std::vector<int> ready;
  for (int k = 0; k < config.chunks; ++k) {
    compute.push_back(ob::summarize(compute_run->chunk_compute_ms[k]).p50);
    comm_ms.push_back(ob::fastest_median(comm_run->chunk_comm_ms[k], comm));
    ready.push_back(k);
  }
  ob::OverlapInputs inputs;
  inputs.compute_time_field = "compute_total_ms_p50";
  const double mine = ob::schedule_bound_ms(ob::summarize(compute_run->forward_ms).p50, compute, comm_ms, ready,
                                            ob::summarize(compute_run->update_ms).p50,
                                            ob::find_row(result.rows, ob::Mode::kCompute)->time_ms.p50,
                                            ob::find_row(result.rows, ob::Mode::kComm)->time_ms.p50);
  inputs.bound_ms = ob::max_across_ranks({mine}, comm)[0];
  ob::derive_overlap_rows(result.rows, base, inputs);
  return result;
}

}  // namespace phase3
