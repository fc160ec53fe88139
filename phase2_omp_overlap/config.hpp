// Phase 2's options: the shared ones plus the pipeline's shape and its two workloads.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/options.hpp"
#include "common/watchdog.hpp"

namespace phase2 {

inline constexpr int kRowsPerThread = 8;

struct Config {
  ob::CommonOptions common;
  ob::FaultOptions fault;
  std::string workload = "synthetic";  // synthetic | real
  int chunks = 10;
  double compute_ms = 4.0;  // synthetic: duration of one chunk's compute task
  double comm_ms = 2.0;  // synthetic: duration of one chunk's communication task
  double jitter = 0.0;  // synthetic: each duration scaled by 1 + jitter * U(-1, 1)
  int chunk_rows = 64;  // real: rows of the gradient one chunk computes
  int hidden = 256;  // real: width of the matrices
  int virtual_ranks = 8;  // real: gradient copies the all-reduce sums
  int threads = 0;  // OpenMP threads in all (compute team + comm thread); 0: compute_threads()'s default
  std::string mode = "all";

  std::vector<ob::Mode> modes() const;  // the modes to run, in the one run order (ob::in_run_order)
  // Threads of the compute team (the comm thread excluded): --threads less one, or by default every OpenMP thread but
  // one, at most one per kRowsPerThread rows of a chunk.
  int compute_threads() const;
};

// Adds phase 2's options (and the common ones) to `app`, bound to `config`.
void add_options(CLI::App& app, Config& config);

// Cross-option checks CLI11 cannot express, and the OpenMP threads this run can have (OMP_NUM_THREADS,
// OMP_THREAD_LIMIT); throws ob::UsageError.
void validate(const Config& config);

}  // namespace phase2
