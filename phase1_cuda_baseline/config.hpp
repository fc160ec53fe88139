// Phase 1's options: the linear model's sizes, the GEMM kernels to run, precision, memory kind and device.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "common/watchdog.hpp"
#include "phase1_cuda_baseline/gemm.cuh"

namespace phase1 {

struct Config {
  ob::CommonOptions common;
  ob::FaultOptions fault;
  int batch = 1024;
  int in = 512;
  int out = 512;
  // 0: auto (auto_lr()). The loss is a mean over batch * out elements, so its gradient is small and a fixed rate
  // that converges at one size diverges at another (100 at 1000 x 333 -> 17 reached a loss of 3e38).
  float lr = 0.0f;
  std::string kernel = "all";  // naive | tiled | cublas | all
  bool tf32 = false;  // cuBLAS only
  std::string memory = "device";
  int device = 0;

  std::vector<GemmKernel> kernels() const;
  double device_bytes() const;  // everything the run allocates on the device
  // The rate SGD uses: --lr, or a quarter of the largest stable one for this problem. Least squares on x uniform in
  // [-1, 1] has a Hessian of largest eigenvalue 2 lambda_max(x^T x) / (batch * out), lambda_max ~ (sqrt(batch) +
  // sqrt(in))^2 / 3 (Marchenko-Pastur), so SGD is stable below 3 batch out / (sqrt(batch) + sqrt(in))^2.
  float learning_rate() const;
};

void add_options(CLI::App& app, Config& config);

// Cross-option checks (e.g. --tf32 with a kernel other than cublas); throws ob::UsageError.
void validate(const Config& config);

}  // namespace phase1
