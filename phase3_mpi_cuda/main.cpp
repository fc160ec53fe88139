// phase3_mpi_cuda: data-parallel training of phase 1's linear model over MPI ranks, gradients computed on a GPU
// (phase 1's kernels) or the CPU, all-reduced chunk by chunk with real MPI: sequentially, from an OpenMP
// communication thread, and with non-blocking collectives.
#include <mpi.h>

#include <iostream>
#include <memory>
#include <utility>
#include <variant>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_phase.hpp"
#include "common/mpi_session.hpp"
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
  std::string text = config.busy() ? ""
                                   : "global batch " +
          (config.batch == 0 ? std::string("auto (compute ~ comm)") : std::to_string(config.batch)) + ", ";
  if (config.grad_mb.empty()) return text + "W " + std::to_string(config.in) + "x" + std::to_string(config.out);
  std::string sizes;
  for (const double mb : config.grad_mb) sizes += (sizes.empty() ? "" : ",") + ob::format_number(mb);
  return text + "gradients " + sizes + " MiB";
}

// Where rank `context.rank` computes: "cpu" or "gpu" (--device auto: a GPU where there is one), and which GPU;
// or the exit code when --device gpu finds none.
std::variant<int, std::pair<std::string, int>> choose_device(const phase3::Config& config,
                                                             const ob::PhaseContext& context) {
  std::string device = config.busy() ? "cpu" : config.device;  // the busy loop runs on the host
#ifdef OVERLAP_HAVE_CUDA
  const auto probe = ob::probe_cuda();
  if (device == "auto") device = probe.devices > 0 ? "gpu" : "cpu";
  if (device == "gpu" && probe.devices == 0) {
    if (context.root) std::cerr << ob::no_device_message("phase3_mpi_cuda", probe) << std::endl;
    return ob::kExitSkipped;
  }
  if (device == "gpu") return std::make_pair(device, ob::gpu_for_rank(ob::local_rank(MPI_COMM_WORLD), probe.devices));
#else
  if (device == "gpu") {
    if (context.root) std::cerr << "phase3_mpi_cuda: no CUDA device available (built without CUDA)" << std::endl;
    return ob::kExitSkipped;
  }
  device = "cpu";
#endif
  return std::make_pair(device, -1);  // ranks may share one GPU
}

// Every gradient size of the run on one time axis, on `device` (GPU `gpu`).
std::variant<int, ob::PhaseResult> run(const phase3::Config& config, const ob::PhaseContext& context) {
  const auto chosen = choose_device(config, context);
  if (const int* code = std::get_if<int>(&chosen)) return *code;
  const auto [device, gpu] = std::get<std::pair<std::string, int>>(chosen);
  ob::require(!config.cuda_aware || mpi_supports_device_buffers(), "--cuda-aware", "on",
              "this MPI library does not report CUDA support (MPIX_Query_cuda_support)");
  const phase3::BackendFactory make_backend = [&](const phase3::Config& c) -> std::unique_ptr<phase3::Backend> {
    if (c.busy()) return phase3::make_busy_backend(c);
    const auto shard = phase3::make_shard(c, phase3::shard(c.batch, context.rank, context.ranks));
#ifdef OVERLAP_HAVE_CUDA
    if (device == "gpu") return phase3::make_gpu_backend(c, shard, gpu);
#endif
    return phase3::make_cpu_backend(c, shard);
  };
  std::ostream* progress = context.progress;
  ob::PhaseResult result;
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
      *progress << "phase3: " << context.ranks << " rank(s), rank 0 computes on " << backend->description()
                << std::endl;
    }
    description = backend->description();
    auto part = phase3::run(point, *backend, device, MPI_COMM_WORLD, progress, origin);
    result.rows.insert(result.rows.end(), part.rows.begin(), part.rows.end());
    if (config.grad_mb.size() > 1) ob::label_point(part.events, "grad_mb=" + ob::format_number(point.grad_mb[0]));
    result.events.insert(result.events.end(), part.events.begin(), part.events.end());
    if (result.failure.empty()) result.failure = part.failure;
  }
#ifdef OVERLAP_HAVE_CUDA
  if (gpu >= 0) result.device = ob::cuda_metadata(gpu);
#endif
  result.meta = {
      {"clock", "std::chrono::steady_clock"}, {"mpi_thread_level", context.mpi->provided()}, {"device", description}};
  result.header = "phase3_mpi_cuda: " + std::to_string(context.ranks) + " ranks, " + config.compute + " compute, " +
      describe_shape(config) + " in " + std::to_string(config.chunks) + " chunks on " + device + ", median of " +
      std::to_string(config.common.iters) + " steps, slowest rank (steady_clock)";
  result.columns = phase3::console_columns();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  phase3::Config config;
  auto phase = ob::make_phase<ob::MpiPhase>(
      "phase3", "phase3_mpi_cuda", "Phase 3: MPI data-parallel training, gradient chunks all-reduced while computing",
      config, phase3::add_options);
  phase.thread_level = MPI_THREAD_SERIALIZED;
  phase.validate = [&](const CLI::App&) { phase3::validate(config); };
  phase.run = [&](const ob::PhaseContext& context) { return run(config, context); };
  return ob::run_mpi_phase(argc, argv, phase);
}
