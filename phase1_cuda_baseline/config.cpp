#include "phase1_cuda_baseline/config.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace phase1 {

void add_options(CLI::App& app, Config& config) {
  ob::add_common_options(app, config.common);
  ob::add_fault_options(app, config.fault);
  ob::add_size_option(app, "--batch", config.batch, "Rows of x (samples per step)", 1 << 20);
  ob::add_size_option(app, "--in", config.in, "Input features (rows of W)", 1 << 20);
  ob::add_size_option(app, "--out", config.out, "Output features (columns of W)", 1 << 20);
  ob::add_checked_option(app, "--lr", config.lr,
                         "SGD learning rate (0: a quarter of the largest stable rate for these sizes)",
                         ob::finite_in(0, 1e9));
  ob::add_checked_option(app, "--kernel", config.kernel, "GEMM kernel: naive|tiled|cublas|all",
                         CLI::IsMember({"naive", "tiled", "cublas", "all"}));
  app.add_flag("--tf32", config.tf32, "cuBLAS with TF32 tensor cores (cublas kernel only)");
  ob::add_checked_option(app, "--memory", config.memory, "device (cudaMalloc) or managed (cudaMallocManaged)",
                         CLI::IsMember({"device", "managed"}));
  ob::add_checked_option(app, "--device", config.device, "CUDA device index", CLI::Range(0, 1023));
}

void validate(const Config& config) {
  ob::require(!config.tf32 || config.kernel == "cublas" || config.kernel == "all", "--tf32", config.kernel,
              "--tf32 needs --kernel cublas (or all, where it applies to cublas only)");
  // Elements are indexed with 64-bit sizes, but each dimension's product must fit a GEMM's int arguments.
  const double largest =
      std::max({1.0 * config.batch * config.in, 1.0 * config.in * config.out, 1.0 * config.batch * config.out});
  ob::require(largest < 2147483647.0, "--batch", std::to_string(config.batch),
              "each matrix must have fewer than 2^31 elements");
}

std::vector<GemmKernel> Config::kernels() const {
  if (kernel == "all") return {GemmKernel::kNaive, GemmKernel::kTiled, GemmKernel::kCublas};
  return {parse_gemm_kernel(kernel)};
}

double Config::device_bytes() const {
  const double b = batch, i = in, o = out;
  return 4.0 * (b * i + 3.0 * i * o + 3.0 * b * o) + 64.0;  // x; W, W*, dW; y, t, dY; the loss
}

float Config::learning_rate() const {
  if (lr > 0) return lr;
  const double root = std::sqrt(static_cast<double>(batch)) + std::sqrt(static_cast<double>(in));
  return static_cast<float>(0.25 * 3.0 * batch * out / (root * root));
}

}  // namespace phase1
