// phase4_chunked_nccl: data-parallel training of an L-layer MLP, one MPI rank per GPU, whose backward pass hands
// gradient buckets to NCCL all-reduces on a second stream as soon as they are ready, measured against sequential,
// compute-only and comm-only runs and the schedule bound; chunk and bucket sweeps in one process.
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <optional>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/device_info.hpp"
#include "common/cuda/power_monitor.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/rank_agreement.hpp"
#include "common/run_output.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/nccl_comm.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"
#include "phase4_chunked_nccl/driver/sweep.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

int main(int argc, char** argv) {
  const std::string program = "phase4_chunked_nccl";
  std::unique_ptr<ob::MpiSession> mpi;  // outlives guarded_main, so a failure can still MPI_Abort the job
  return ob::guarded_main(program, [&]() -> int {
    mpi = std::make_unique<ob::MpiSession>(argc, argv, MPI_THREAD_SINGLE);
    const bool root = mpi->rank() == 0;
    CLI::App app("Phase 4: bucketed NCCL all-reduce overlapped with an MLP's backward pass", program);
    phase4::Config config;
    phase4::add_options(app, config);
    ob::OutputPaths paths;
    if (auto code = ob::parse_on_every_rank(app, argc, argv, MPI_COMM_WORLD, [&] {
          phase4::validate(app, config);
          paths = ob::resolve_output_paths("phase4", config.common);
        })) {
      return *code;
    }
    // A stalled rank: abort this rank's NCCL communicator (its kernels stop), then the whole job.
    static std::atomic<ncclComm_t> live_comm{nullptr};
    ob::Watchdog watchdog(program, mpi->rank(), mpi->size(), config.fault, [] {
      if (ncclComm_t comm = live_comm.load()) ncclCommAbort(comm);
      MPI_Abort(MPI_COMM_WORLD, ob::kExitRuntime);
    });

    const auto probe = ob::probe_cuda();
    if (probe.devices == 0) {
      if (root) std::cerr << ob::no_device_message(program, probe) << std::endl;
      return ob::kExitSkipped;
    }
    // Every task sees every GPU of its node, or only its own: either way a GPU of its own, unless a node has more
    // ranks than GPUs, which NCCL refuses (two ranks on one GPU).
    const int device = ob::gpu_for_rank(ob::local_rank(MPI_COMM_WORLD), probe.devices);
    CUDA_CHECK(cudaSetDevice(device));
    char bus_id[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
    const std::string shared = ob::first_nonempty(ob::shared_gpu(ob::gather_on_node(bus_id, MPI_COMM_WORLD)),
                                                  MPI_COMM_WORLD);
    if (!shared.empty()) {
      if (root) std::cerr << program << ": needs one GPU per rank: " << shared << std::endl;
      return ob::kExitSkipped;
    }
    auto points = config.sweep_points();
    for (const auto& point : points) {
      for (const auto& sync : point.plan_mode == "auto" || config.calibrate ? point.planned_syncs()
                                                                             : std::vector<std::string>{point.sync}) {
        auto planned = point;
        planned.sync = sync;
        ob::require_fits_on_device("--batch", std::to_string(point.batch), planned.device_bytes());
      }
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    std::optional<phase4::Calibration> calibration;
    if (!config.calibration.empty()) {
      calibration = phase4::load_calibration(config.calibration, config, mpi->size(), prop.name, MPI_COMM_WORLD);
    }

    phase4::require_sm_margin(points);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const auto origin = ob::SteadyClock::now();
    std::unique_ptr<ob::PowerMonitor> power;
    if (config.power) {
      power = std::make_unique<ob::PowerMonitor>(device, mpi->rank(), origin);
      int available = power->available(), everywhere = 0;
      MPI_CHECK(MPI_Allreduce(&available, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
      if (!everywhere) {
        if (root || !available) std::cerr << "phase4: rank " << mpi->rank() << ": power: unavailable ("
                                          << (available ? "not on every rank" : power->why()) << ")" << std::endl;
        power.reset();
      }
    }
    const bool asked_for_power = config.power;
    config.power = power != nullptr;  // energy columns only where power is measured
    for (auto& point : points) point.power = config.power;
    if (root && !config.common.quiet && mpi->size() == 1) {
      std::cerr << "phase4: 1 rank: the all-reduces move no data (comm is a no-op)" << std::endl;
    }
    const auto result = phase4::run_sweep(points, mpi->rank(), mpi->size(), MPI_COMM_WORLD, origin, power.get(),
                                          live_comm, root && !config.common.quiet ? &std::cerr : nullptr,
                                          calibration ? &*calibration : nullptr, config.calibrate);
    const auto& rows = result.rows;
    const auto& events = result.events;
    const std::string& failure = result.failure;

    // A fault injected at a step that never came proved nothing: a usage error, and nothing is written.
    if (auto code = ob::stop_on_any_rank(program, watchdog.unfired_fault(), MPI_COMM_WORLD)) return *code;
    const auto samples = power ? ob::gather_power(power->samples(), MPI_COMM_WORLD) : std::vector<ob::PowerSample>();
    const auto hosts = ob::rank_hosts(MPI_COMM_WORLD);
    const auto command_lines = ob::rank_command_lines(argc, argv, MPI_COMM_WORLD);
    const auto gpus = ob::gather_json(ob::cuda_metadata(device), MPI_COMM_WORLD);
    if (root) {
      auto meta = ob::base_metadata("phase4", argc, argv);
      meta["hosts"] = hosts;
      meta["rank_command_lines"] = command_lines;
      meta["clock"] = "cuda_event";
      meta["gpus"] = gpus;  // every rank's GPU, in rank order
      meta["nccl_nvls_enable"] = std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "unset";
      meta["power"] = power ? "nvml, every 20 ms" : asked_for_power ? "unavailable" : "off";
      const auto power_table = ob::power_csv(samples);
      if (result.measured) meta["calibration"] = paths.calibration_json;
      if (!config.calibration.empty()) meta["calibration"] = config.calibration;
      std::vector<std::pair<std::string, std::string>> extra;
      if (result.measured) extra.emplace_back(paths.calibration_json, result.measured->to_json().dump(2) + "\n");
      if (failure.empty()) {
        write_run_outputs(paths, "phase4", rows, meta, events, power ? &power_table : nullptr, extra);
      }
      std::cout << "# phase4_chunked_nccl: " << mpi->size() << " rank(s), MLP H=" << config.hidden << " L="
                << config.layers << " B=" << config.batch << " per rank, " << (config.tf32 ? "TF32" : "fp32")
                << " GEMMs, median of " << config.common.iters
                << (config.mode == "interference" ? " passes" : " steps") << ", slowest rank (CUDA events)\n";
      std::cout << ob::render_summary(rows, phase4::console_columns(config)) << ob::outputs_line(paths, failure.empty())
                << "\n";
      if (result.measured && failure.empty()) std::cout << "# calibration: " << paths.calibration_json << "\n";
      if (power && failure.empty()) std::cout << "# power: " << paths.power_csv << " (" << samples.size() << " samples)\n";
    }
    if (!failure.empty()) {
      if (root) throw ob::CheckFailure(failure);
      return ob::kExitCheckFailed;
    }
    return ob::kExitOk;
  }, true);
}
