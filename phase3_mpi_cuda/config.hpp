// Phase 3's options: the data-parallel linear model, its chunks, the overlap strategies and where compute runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/options.hpp"
#include "common/watchdog.hpp"

namespace phase3 {

struct Config {
  ob::CommonOptions common;
  ob::FaultOptions fault;
  int batch = 1024;  // global batch, split over ranks (unevenly when it does not divide)
  int in = 512;
  int out = 512;
  float lr = 100.0f;  // the loss is a mean over batch * out elements (as phase 1)
  int chunks = 8;     // row blocks of dW, each all-reduced on its own
  std::string strategy = "all";  // seq | thread | nonblocking | all
  std::string device = "auto";   // cpu | gpu | auto
  std::string kernel = "cublas";  // GPU GEMM: naive | tiled | cublas (phase 1's kernels)
  bool cuda_aware = false;
  int threads = 0;  // OpenMP threads per rank (compute team + comm thread); 0: omp_get_max_threads()

  std::vector<ob::Mode> modes() const;  // compute, comm, then the strategies (ob::in_run_order)
  int compute_threads() const;
};

void add_options(CLI::App& app, Config& config);
void validate(const Config& config);  // throws ob::UsageError

// Rows [begin, end) of the global batch that `rank` of `ranks` holds; and the rows of dW chunk `k`.
struct Range {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};
Range shard(int rows, int rank, int ranks);
Range chunk_rows(int rows, int chunk, int chunks);

}  // namespace phase3
