// phase3_mpi_cuda: data-parallel training of phase 1's linear model over MPI ranks, gradients computed on a GPU
// (phase 1's kernels) or the CPU, all-reduced chunk by chunk with real MPI: sequentially, from an OpenMP
// communication thread, and with non-blocking collectives.
#include <mpi.h>

#include <iostream>
#include <memory>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/rank_agreement.hpp"
#include "common/run_output.hpp"
#include "common/timeline.hpp"
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


// "global batch 1024, W 512x512", or what the sweep and --batch auto leave open.
std::string describe_shape(const phase3::Config& config) {
  std::string text = config.busy() ? "" : "global batch " + (config.batch == 0 ? std::string("auto (compute ~ comm)")
                                                                                : std::to_string(config.batch)) + ", ";
  if (config.grad_mb.empty()) return text + "W " + std::to_string(config.in) + "x" + std::to_string(config.out);
  std::string sizes;
  for (const double mb : config.grad_mb) sizes += (sizes.empty() ? "" : ",") + ob::format_number(mb);
  return text + "gradients " + sizes + " MiB";
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

    std::string device = config.busy() ? "cpu" : config.device;  // the busy loop runs on the host
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

    const phase3::BackendFactory make_backend = [&](const phase3::Config& c) -> std::unique_ptr<phase3::Backend> {
      if (c.busy()) return phase3::make_busy_backend(c);
      const auto shard = phase3::make_shard(c, phase3::shard(c.batch, mpi->rank(), mpi->size()));
#ifdef OVERLAP_HAVE_CUDA
      if (device == "gpu") return phase3::make_gpu_backend(c, shard, gpu);
#endif
      return phase3::make_cpu_backend(c, shard);
    };
    std::ostream* progress = root && !config.common.quiet ? &std::cerr : nullptr;
    phase3::Result result;
    std::string description;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const auto origin = ob::SteadyClock::now();  // one time axis for every gradient size
    for (auto point : config.points()) {
      if (progress && !config.grad_mb.empty()) {
        *progress << "phase3: gradient " << ob::format_number(point.grad_mb[0]) << " MiB (W " << point.in << "x"
                  << point.out << ")" << std::endl;
      }
      if (point.batch == 0) point.batch = phase3::batch_for_comm(point, make_backend, MPI_COMM_WORLD, progress);
      auto backend = make_backend(point);
      if (description.empty() && progress) {
        *progress << "phase3: " << mpi->size() << " rank(s), rank 0 computes on " << backend->description() << std::endl;
      }
      description = backend->description();
      auto part = phase3::run(point, *backend, device, MPI_COMM_WORLD, progress, origin);
      result.rows.insert(result.rows.end(), part.rows.begin(), part.rows.end());
      if (config.grad_mb.size() > 1) ob::label_point(part.events, "grad_mb=" + ob::format_number(point.grad_mb[0]));
      result.events.insert(result.events.end(), part.events.begin(), part.events.end());
      if (result.failure.empty()) result.failure = part.failure;
    }
    // A fault injected at a step that never came proved nothing: a usage error, and nothing is written.
    if (auto code = ob::stop_on_any_rank(program, watchdog.unfired_fault(), MPI_COMM_WORLD)) return *code;
    const auto hosts = ob::rank_hosts(MPI_COMM_WORLD);
    const auto command_lines = ob::rank_command_lines(argc, argv, MPI_COMM_WORLD);
    const auto gpus = ob::gather_json(gpu_meta.empty() ? nlohmann::json() : gpu_meta[0], MPI_COMM_WORLD);
    if (root) {
      auto meta = ob::base_metadata("phase3", argc, argv);
      meta["hosts"] = hosts;
      meta["rank_command_lines"] = command_lines;
      meta["clock"] = "std::chrono::steady_clock";
      meta["mpi_thread_level"] = mpi->provided();
      meta["device"] = description;
      if (!gpu_meta.empty()) meta["gpus"] = gpus;  // every rank's GPU, in rank order
      if (result.failure.empty()) write_run_outputs(paths, "phase3", result.rows, meta, result.events);
      std::cout << "# phase3_mpi_cuda: " << mpi->size() << " ranks, " << config.compute << " compute, "
                << describe_shape(config) << " in " << config.chunks << " chunks on " << device << ", median of "
                << config.common.iters << " steps, slowest rank (steady_clock)\n"
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
