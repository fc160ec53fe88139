// phase1_cuda_baseline: the single-GPU training loop of one linear layer, fully sequential on one stream, every
// kernel timed with CUDA events, with naive, tiled and cuBLAS GEMMs side by side and a CPU double reference check.
#include <iostream>
#include <variant>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/device_info.hpp"
#include "common/errors.hpp"
#include "common/phase_runner.hpp"
#include "phase1_cuda_baseline/config.hpp"
#include "phase1_cuda_baseline/report.hpp"
#include "phase1_cuda_baseline/trainer.hpp"

namespace {

// Every --kernel variant trained on --device, one after the other.
std::variant<int, ob::PhaseResult> run(const phase1::Config& config, const ob::PhaseContext& context) {
  const auto probe = ob::probe_cuda();
  if (probe.devices == 0) {
    std::cerr << ob::no_device_message("phase1_cuda_baseline", probe) << std::endl;
    return ob::kExitSkipped;
  }
  ob::require(config.device < probe.devices, "--device", std::to_string(config.device),
              "a device index below " + std::to_string(probe.devices));
  CUDA_CHECK(cudaSetDevice(config.device));
  ob::require_fits_on_device("--batch", std::to_string(config.batch), config.device_bytes());
  phase1::Trainer trainer(config);
  std::vector<phase1::VariantResult> results;
  for (auto kernel : config.kernels()) {
    if (context.progress)
      *context.progress << "phase1: training with " << phase1::gemm_kernel_name(kernel) << std::endl;
    results.push_back(trainer.run(kernel));
  }
  ob::PhaseResult result;
  result.rows = phase1::summary_rows(config, results);
  for (const auto& r : results) result.events.insert(result.events.end(), r.events.begin(), r.events.end());
  result.failure = phase1::first_check_failure(results, trainer);
  result.device = ob::cuda_metadata(config.device);
  result.meta["clock"] = "cuda_event";
  result.header = "phase1_cuda_baseline: y = x·W with x " + std::to_string(config.batch) + "x" +
      std::to_string(config.in) + ", W " + std::to_string(config.in) + "x" + std::to_string(config.out) + " on " +
      result.device["gpu_name"].get<std::string>() + ", median of " + std::to_string(config.common.iters) +
      " steps (CUDA events)";
  result.table = phase1::console_table(result.rows);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  phase1::Config config;
  auto phase = ob::make_phase("phase1", "phase1_cuda_baseline",
                              "Phase 1: sequential CUDA training loop of one linear layer, timed per kernel", config,
                              phase1::add_options);
  phase.validate = [&](const CLI::App&) { phase1::validate(config); };
  phase.run = [&](const ob::PhaseContext& context) { return run(config, context); };
  return ob::run_phase(argc, argv, phase);
}
