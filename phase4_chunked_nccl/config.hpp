// Phase 4's options: the MLP, how its gradient is bucketed, the modes and the sweeps.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "phase4_chunked_nccl/bucket_plan.hpp"

namespace phase4 {

struct Config {
  ob::CommonOptions common;
  int hidden = 4096;
  int layers = 16;
  int batch = 512;  // rows per rank
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  int chunks = 0;  // > 0: that many equal buckets instead of size-capped ones
  bool tf32 = true;
  float lr = 0.01f;
  std::string mode = "all";
  std::string comm_priority = "normal";  // the comm stream's priority: normal | high
  int nccl_max_ctas = 0;  // ncclConfig_t.maxCTAs (0: NCCL's default)
  int nccl_min_ctas = 0;  // ncclConfig_t.minCTAs (0: NCCL's default)
  std::string sweep;  // "chunks=5,10,20,50", "bucket-mb=1,5,25,100" or "nccl-max-ctas=2,4,8,16,32"

  std::vector<std::string> modes() const;  // in run order; compute and comm come first when derived rows need them
  BucketPlan plan() const;
  double grad_mb() const;
  double device_bytes() const;  // weights, gradients, activations and work buffers on one GPU
  std::vector<Config> sweep_points() const;  // this configuration once per sweep value (itself when no sweep)
  std::string point_label() const;           // "chunks=20", "bucket-mb=25", with ", nccl-max-ctas=4" when set
};

void add_options(CLI::App& app, Config& config);
void validate(const CLI::App& app, const Config& config);  // throws ob::UsageError

}  // namespace phase4
