#include "phase2_omp_overlap/config.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

#include "common/csv_writer.hpp"
#include "common/iteration.hpp"

namespace phase2 {

void add_options(CLI::App& app, Config& config) {
  config.common.iters = 10;
  ob::add_common_options(app, config.common);
  ob::add_checked_option(app, "--workload", config.workload,
                         "synthetic: timed waits; real: OpenMP GEMM + in-memory all-reduce",
                         CLI::IsMember({"synthetic", "real"}));
  ob::add_checked_option(app, "--chunks", config.chunks, "Pieces the gradient is computed and communicated in",
                         CLI::Range(1, 100000));
  ob::add_checked_option(app, "--compute-ms", config.compute_ms, "synthetic: compute time of one chunk (ms)",
                         ob::finite_in(0, 60000));
  ob::add_checked_option(app, "--comm-ms", config.comm_ms, "synthetic: communication time of one chunk (ms)",
                         ob::finite_in(0, 60000));
  ob::add_checked_option(app, "--jitter", config.jitter, "synthetic: durations vary by +-this fraction (seeded)",
                         ob::finite_in(0, 1));
  ob::add_size_option(app, "--chunk-rows", config.chunk_rows, "real: gradient rows per chunk", 1 << 24);
  ob::add_size_option(app, "--hidden", config.hidden, "real: matrix width", 1 << 16);
  ob::add_checked_option(app, "--virtual-ranks", config.virtual_ranks, "real: gradient copies summed by the all-reduce",
                         CLI::Range(1, 4096));
  ob::add_checked_option(
      app, "--threads", config.threads,
      "OpenMP threads: compute team + 1 comm thread (0: a team of all but one, at most one per 8 rows of a "
      "chunk)",
      CLI::Range(0, 4096));
  ob::add_checked_option(app, "--mode", config.mode, "seq|overlap|compute|comm|all",
                         CLI::IsMember({"seq", "overlap", "compute", "comm", "all"}));
  ob::add_fault_options(app, config.fault);
}

void validate(const Config& config) {
  ob::parse_fault(config.fault.inject_fault);
  ob::require_timeline_fits("--chunks", std::to_string(config.chunks),
                            2.0 * config.chunks * ob::most_timed_iters(config.common.iters, config.common.min_time_ms) *
                                static_cast<double>(config.modes().size()));
  // What the user asked for (the default team takes at most that many): refused when it cannot work.
  ob::require_thread_count(config.threads);
  const auto modes = config.modes();
  const bool overlaps = std::find(modes.begin(), modes.end(), ob::Mode::kOverlap) != modes.end();
  ob::require(!overlaps || omp_get_thread_limit() >= 2, "OMP_THREAD_LIMIT", std::to_string(omp_get_thread_limit()),
              "the overlapped mode needs 2 OpenMP threads (a compute and a communication thread)");
  if (config.workload == "synthetic") {  // every mode's warm-up (at most 4 x max(--warmup, 6)) and timed steps
    const double steps =
        (config.common.iters + 4.0 * std::max(config.common.warmup, 6)) * static_cast<double>(modes.size());
    ob::require_step_within_timeout(config.fault, "--compute-ms", ob::format_number(config.compute_ms),
                                    config.chunks * (config.compute_ms + config.comm_ms) / 1000);
    ob::require_stated_length("--compute-ms", ob::format_number(config.compute_ms),
                              steps * config.chunks * (config.compute_ms + config.comm_ms) / 1000 +
                                  static_cast<double>(modes.size()) * config.common.min_time_ms / 1000);
  }
  if (config.workload == "real") {
    const double elements = static_cast<double>(config.chunks) * config.chunk_rows * config.hidden;
    const double bytes = elements * 4.0 * (config.virtual_ranks + 2) + 8.0 * config.hidden * config.hidden;
    ob::require_fits_in_host_memory("--chunk-rows", std::to_string(config.chunk_rows), bytes);
    // Every product and sum must stay an integer below 2^24 to be exact in fp32: inputs are in [-2, 2].
    const double largest = 4.0 * config.hidden * config.virtual_ranks + config.virtual_ranks * config.virtual_ranks;
    ob::require(largest < (1 << 24), "--virtual-ranks", std::to_string(config.virtual_ranks),
                "4 * hidden * virtual-ranks must stay below 2^24 so the all-reduce is exact in fp32");
  }
}

std::vector<ob::Mode> Config::modes() const {
  if (mode == "all") return ob::in_run_order({ob::Mode::kSeq, ob::Mode::kOverlap, ob::Mode::kCompute, ob::Mode::kComm});
  return {ob::parse_mode(mode)};
}

int Config::compute_threads() const {
  if (threads > 0) return std::max(1, threads - 1);
  // The default team: every thread but the communication thread, and no more than one per kRowsPerThread rows of a
  // chunk (the real workload's; the synthetic one's waits need one thread). Measured on a 16-core host (64-row
  // chunks): 15 compute threads hid 25 % of the communication, 7 hid 88 %, 3 hid 96 %: beyond that a thread's share of
  // a chunk costs less than the chunk's hand-offs between the team, and the team's memory traffic slows the all-reduce.
  const int by_rows = std::max(1, chunk_rows / kRowsPerThread);
  return std::max(1, std::min(omp_get_max_threads() - 1, by_rows));
}

}  // namespace phase2
