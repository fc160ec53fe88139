// phase1_cuda_baseline: the single-GPU training loop of one linear layer, fully sequential on one stream, every
// kernel timed with CUDA events, with naive, tiled and cuBLAS GEMMs side by side and a CPU double reference check.
#include <iostream>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/device_info.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/run_output.hpp"
#include "phase1_cuda_baseline/config.hpp"
#include "phase1_cuda_baseline/report.hpp"
#include "phase1_cuda_baseline/trainer.hpp"

int main(int argc, char** argv) {
  const std::string program = "phase1_cuda_baseline";
  return ob::guarded_main(program, [&]() -> int {
    CLI::App app("Phase 1: sequential CUDA training loop of one linear layer, timed per kernel", program);
    phase1::Config config;
    phase1::add_options(app, config);
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;
    phase1::validate(config);
    const auto paths = ob::resolve_output_paths("phase1", config.common);

    const auto probe = ob::probe_cuda();
    if (probe.devices == 0) {
      std::cerr << ob::no_device_message(program, probe) << std::endl;
      return ob::kExitSkipped;
    }
    ob::require(config.device < probe.devices, "--device", std::to_string(config.device),
                "a device index below " + std::to_string(probe.devices));
    CUDA_CHECK(cudaSetDevice(config.device));
    ob::require_fits_on_device("--batch", std::to_string(config.batch), config.device_bytes());

    phase1::Trainer trainer(config);
    std::vector<phase1::VariantResult> results;
    for (auto kernel : config.kernels()) {
      if (!config.common.quiet) std::cerr << "phase1: training with " << phase1::gemm_kernel_name(kernel) << std::endl;
      results.push_back(trainer.run(kernel));
    }
    const auto rows = phase1::summary_rows(config, results);
    std::vector<ob::TimelineEvent> events;
    for (const auto& r : results) events.insert(events.end(), r.events.begin(), r.events.end());

    auto meta = ob::base_metadata("phase1", argc, argv);
    meta["clock"] = "cuda_event";
    meta["gpus"] = nlohmann::json::array({ob::cuda_metadata(config.device)});
    const std::string failure = phase1::first_check_failure(results, trainer);
    if (failure.empty()) write_run_outputs(paths, "phase1", rows, meta, events);

    std::cout << "# phase1_cuda_baseline: y = x·W with x " << config.batch << "x" << config.in << ", W " << config.in
              << "x" << config.out << " on " << meta["gpus"][0]["gpu_name"].get<std::string>() << ", median of "
              << config.common.iters << " steps (CUDA events)\n"
              << phase1::console_table(rows) << ob::outputs_line(paths, failure.empty()) << "\n";
    if (!failure.empty()) throw ob::CheckFailure(failure);
    return ob::kExitOk;
  });
}
