// phase3_mpi_cuda: data-parallel training of phase 1's linear model over MPI ranks, gradients computed on a GPU
// (phase 1's kernels) or the CPU, all-reduced chunk by chunk with real MPI: sequentially, from an OpenMP
// communication thread, and with non-blocking collectives.
#include <mpi.h>

#include <iostream>
#include <memory>

#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/rank_agreement.hpp"
#include "common/run_output.hpp"
#include "common/watchdog.hpp"
#include "phase3_mpi_cuda/backend.hpp"
#include "phase3_mpi_cuda/config.hpp"
#include "phase3_mpi_cuda/runner.hpp"
#ifdef OVERLAP_HAVE_CUDA
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_info.hpp"
#endif
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace {

bool mpi_supports_device_buffers() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}


}  // namespace

int main(int argc, char** argv) {
  const std::string program = "phase3_mpi_cuda";
  std::unique_ptr<ob::MpiSession> mpi;  // outlives guarded_main, so a failure can still MPI_Abort the job
  return ob::guarded_main(program, [&]() -> int {
    mpi = std::make_unique<ob::MpiSession>(argc, argv, MPI_THREAD_SERIALIZED);
    const bool root = mpi->rank() == 0;
    CLI::App app("Phase 3: MPI data-parallel training, gradient chunks all-reduced while computing", program);
    phase3::Config config;
    phase3::add_options(app, config);
    ob::OutputPaths paths;
    if (auto code = ob::parse_on_every_rank(app, argc, argv, MPI_COMM_WORLD, [&] {
          phase3::validate(config);
          paths = ob::resolve_output_paths("phase3", config.common);
        })) {
      return *code;
    }
    ob::Watchdog watchdog(program, mpi->rank(), mpi->size(), config.fault,
                          [] { MPI_Abort(MPI_COMM_WORLD, ob::kExitRuntime); });

    std::string device = config.device;
    nlohmann::json gpu_meta = nlohmann::json::array();
    int gpu = -1;
#ifdef OVERLAP_HAVE_CUDA
    const auto probe = ob::probe_cuda();
    if (device == "auto") device = probe.devices > 0 ? "gpu" : "cpu";
    if (device == "gpu" && probe.devices == 0) {
      if (root) std::cerr << ob::no_device_message(program, probe) << std::endl;
      return ob::kExitSkipped;
    }
    if (device == "gpu") {
      gpu = ob::gpu_for_rank(ob::local_rank(MPI_COMM_WORLD), probe.devices);  // ranks may share one
      gpu_meta.push_back(ob::cuda_metadata(gpu));
    }
#else
    if (device == "gpu") {
      if (root) std::cerr << program << ": no CUDA device available (built without CUDA)" << std::endl;
      return ob::kExitSkipped;
    }
    device = "cpu";
#endif
    ob::require(!config.cuda_aware || mpi_supports_device_buffers(), "--cuda-aware", "on",
                "this MPI library does not report CUDA support (MPIX_Query_cuda_support)");

    const auto shard = phase3::make_shard(config, phase3::shard(config.batch, mpi->rank(), mpi->size()));
    std::unique_ptr<phase3::Backend> backend;
#ifdef OVERLAP_HAVE_CUDA
    if (device == "gpu") backend = phase3::make_gpu_backend(config, shard, gpu);
#endif
    if (!backend) backend = phase3::make_cpu_backend(config, shard);
    if (root && !config.common.quiet) {
      std::cerr << "phase3: " << mpi->size() << " rank(s), rank 0 computes on " << backend->description() << std::endl;
    }

    const auto result = phase3::run(config, *backend, device, MPI_COMM_WORLD,
                                    root && !config.common.quiet ? &std::cerr : nullptr);
    // A fault injected at a step that never came proved nothing: a usage error, and nothing is written.
    if (auto code = ob::stop_on_any_rank(program, watchdog.unfired_fault(), MPI_COMM_WORLD)) return *code;
    const auto hosts = ob::rank_hosts(MPI_COMM_WORLD);
    if (root) {
      auto meta = ob::base_metadata("phase3", argc, argv);
      meta["hosts"] = hosts;
      meta["clock"] = "std::chrono::steady_clock";
      meta["mpi_thread_level"] = mpi->provided();
      meta["device"] = backend->description();
      if (!gpu_meta.empty()) meta["gpus"] = gpu_meta;
      if (result.failure.empty()) write_run_outputs(paths, "phase3", result.rows, meta, result.events);
      std::cout << "# phase3_mpi_cuda: " << mpi->size() << " ranks, global batch " << config.batch << ", W "
                << config.in << "x" << config.out << " in " << config.chunks << " chunks on " << device
                << ", median of " << config.common.iters << " steps, slowest rank (steady_clock)\n"
                << ob::render_summary(result.rows, phase3::console_columns())
                << ob::outputs_line(paths, result.failure.empty()) << "\n";
    }
    if (!result.failure.empty()) {
      if (root) throw ob::CheckFailure(result.failure);
      return ob::kExitCheckFailed;
    }
    return ob::kExitOk;
  }, true);
}
