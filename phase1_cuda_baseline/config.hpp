// Phase 1's options: the linear model's sizes, the GEMM kernels to run, precision, memory kind and device.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "phase1_cuda_baseline/gemm.cuh"

namespace phase1 {

struct Config {
  ob::CommonOptions common;
  int batch = 1024;
  int in = 512;
  int out = 512;
  // The loss is a mean over batch * out elements, so its gradient is small: 100 converges at the default sizes.
  float lr = 100.0f;
  std::string kernel = "all";  // naive | tiled | cublas | all
  bool tf32 = false;           // cuBLAS only
  std::string memory = "device";
  int device = 0;

  std::vector<GemmKernel> kernels() const;
  double device_bytes() const;  // everything the run allocates on the device
};

void add_options(CLI::App& app, Config& config);

// Cross-option checks (e.g. --tf32 with a kernel other than cublas); throws ob::UsageError.
void validate(const Config& config);

}  // namespace phase1
