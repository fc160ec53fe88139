// Phase 3's options: the data-parallel linear model, its chunks, the overlap strategies and where compute runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/options.hpp"
#include "common/watchdog.hpp"

namespace phase3 {

// Phase 3's overlapped strategies, its own modes (common/modes.hpp: registered, not listed there).
inline const ob::Mode kThread = ob::register_mode("thread", ob::ModeKind::kOverlapped);
inline const ob::Mode kNonblocking = ob::register_mode("nonblocking", ob::ModeKind::kOverlapped);
inline const ob::Mode kProgress = ob::register_mode("progress", ob::ModeKind::kOverlapped);

// --batch auto: the largest gradient it sizes, and the rows its search tries (at least 512 per rank of 2).
constexpr double kMostAutoGradientMb = 256;
constexpr int kAutoTrialRows = 1024;

struct Config {
  ob::CommonOptions common;
  ob::FaultOptions fault;
  int batch = 1024;  // global batch, split over ranks (unevenly when it does not divide); 0: auto (compute ~ comm)
  int in = 512;
  int out = 512;
  float lr = 100.0f;  // the loss is a mean over batch * out elements (as phase 1)
  int chunks = 8;  // row blocks of dW, each all-reduced on its own
  std::string strategy = "all";  // seq | thread | nonblocking | progress | all
  std::string compute = "gemm";  // gemm: the model's real GEMMs | busy: OSU's wall-clock busy loop
  int probes = 0;  // busy + nonblocking: MPI_Test calls during each chunk's busy loop (OSU's -t)
  double busy_us = 0;  // busy: each chunk's target; 0: the chunk's measured pure all-reduce time
  double backoff_us = 50;  // progress: the longest sleep between MPI_Test rounds that moved nothing
  std::vector<double> grad_mb;  // gradient sizes to sweep (MiB): out = grad_mb * 2^20 / (4 * in)
  std::string device = "auto";  // cpu | gpu | auto
  std::string kernel = "cublas";  // GPU GEMM: naive | tiled | cublas (phase 1's kernels)
  bool cuda_aware = false;
  bool share_gpu = false;  // --device gpu|auto: ranks of a node may share a GPU when it has fewer GPUs than ranks
  int threads = 0;  // OpenMP threads per rank (compute team + comm thread); 0: omp_get_max_threads()

  std::vector<ob::Mode> modes() const;  // in run order: comm first with --compute busy (it sizes the loop)
  int compute_threads() const;
  bool busy() const { return compute == "busy"; }
  std::vector<Config> points() const;
  double host_bytes()
      const;  // this rank's arrays at most (the whole batch on one rank)  // one per --grad-mb (out set from it), or this one
};

void add_options(CLI::App& app, Config& config);
void validate(const Config& config);  // throws ob::UsageError

// The smallest step steady_clock shows on this machine (ms): a busy target below it cannot be timed.
double clock_resolution_ms();

// Rows [begin, end) of the global batch that `rank` of `ranks` holds; and the rows of dW chunk `k`.
struct Range {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};
Range shard(int rows, int rank, int ranks);
Range chunk_rows(int rows, int chunk, int chunks);

}  // namespace phase3
