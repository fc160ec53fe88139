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

// Where rank `context.rank` computes: "cpu" or "gpu", which GPU, how many ranks of its node share that GPU at most
// (0 on the CPU), and why, where it says more than the device; or the exit code when --device gpu finds none.
struct Placement {
  std::string device;
  int gpu = -1;
  int ranks_per_gpu = 0;
  std::string note;  // for the header: "2 ranks time-slice 1 GPU (--share-gpu)", or why auto chose the CPU
};

// A node's GPUs over its ranks (a collective): with fewer GPUs than ranks, ranks share only on --share-gpu; without
// it --device gpu is refused (exit 2, before any work) and --device auto computes on the CPU.
std::variant<int, Placement> choose_device(const phase3::Config& config, const ob::PhaseContext& context) {
  Placement place;
  place.device = config.busy() ? "cpu" : config.device;  // the busy loop runs on the host
#ifdef OVERLAP_HAVE_CUDA
  const auto probe = ob::probe_cuda();
  const int local_ranks = static_cast<int>(ob::gather_on_node("", MPI_COMM_WORLD).size());
  int most_local = local_ranks;  // the busiest node decides for every rank: one device for the whole run
  MPI_CHECK(MPI_Allreduce(&local_ranks, &most_local, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  const bool enough = probe.devices >= most_local;
  const std::string count =
      std::to_string(most_local) + " ranks on a node for " + std::to_string(probe.devices) + " GPU(s)";
  if (place.device == "auto") {
    place.device = probe.devices > 0 && (enough || config.share_gpu) ? "gpu" : "cpu";
    if (probe.devices > 0 && place.device == "cpu")
      place.note = "--device auto: " + count + "; --share-gpu shares them";
  }
  if (place.device == "gpu" && probe.devices == 0) {
    if (context.root) std::cerr << ob::no_device_message("phase3_mpi_cuda", probe) << std::endl;
    return ob::kExitSkipped;
  }
  ob::require(place.device != "gpu" || enough || config.share_gpu, "--device", "gpu",
              count + ": add --share-gpu to let ranks time-slice a GPU, or use --device cpu");
  if (place.device == "gpu") {
    place.gpu = ob::gpu_for_rank(ob::local_rank(MPI_COMM_WORLD), probe.devices);
    place.ranks_per_gpu = (most_local + probe.devices - 1) / probe.devices;
    if (place.ranks_per_gpu > 1) {
      place.note = std::to_string(place.ranks_per_gpu) + " ranks time-slice each GPU's compute (--share-gpu)";
    }
  }
#else
  if (place.device == "gpu") {
    if (context.root) std::cerr << "phase3_mpi_cuda: no CUDA device available (built without CUDA)" << std::endl;
    return ob::kExitSkipped;
  }
  place.device = "cpu";
#endif
  return place;
}

// Every gradient size of the run on one time axis, on `device` (GPU `gpu`).
std::variant<int, ob::PhaseResult> run(const phase3::Config& config, const ob::PhaseContext& context) {
  const auto chosen = choose_device(config, context);
  if (const int* code = std::get_if<int>(&chosen)) return *code;
  const Placement place = std::get<Placement>(chosen);
  const std::string& device = place.device;
  const int gpu = place.gpu;
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
    for (auto& row : part.rows) row.config("ranks_per_gpu", place.ranks_per_gpu);
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
      describe_shape(config) + " in " + std::to_string(config.chunks) + " chunks on " + device +
      (place.note.empty() ? "" : " (" + place.note + ")") + ", median of " + std::to_string(config.common.iters) +
      " steps, slowest rank (steady_clock)";
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
