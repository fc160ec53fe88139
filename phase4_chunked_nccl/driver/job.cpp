#include "phase4_chunked_nccl/driver/job.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_info.hpp"
#include "common/cuda/power_monitor.hpp"
#include "common/errors.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/rank_agreement.hpp"
#include "phase4_chunked_nccl/driver/nccl_path.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"
#include "phase4_chunked_nccl/driver/sweep.hpp"
#include "phase4_chunked_nccl/driver/transport.hpp"

namespace phase4 {
namespace {

const char* const kProgram = "phase4_chunked_nccl";

// This rank's GPU, made current (one per rank: NCCL refuses two ranks on one GPU), or -1, said on stderr, when
// there is none.
int choose_gpu(const ob::PhaseContext& context) {
  const auto probe = ob::probe_cuda();
  if (probe.devices == 0) {
    if (context.root) std::cerr << ob::no_device_message(kProgram, probe) << std::endl;
    return -1;
  }
  // Every task sees every GPU of its node, or only its own: either way a GPU of its own, unless a node has more
  // ranks than GPUs.
  const int device = ob::gpu_for_rank(ob::local_rank(MPI_COMM_WORLD), probe.devices);
  CUDA_CHECK(cudaSetDevice(device));
  char bus_id[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  const std::string shared =
      ob::first_nonempty(ob::shared_gpu(ob::gather_on_node(bus_id, MPI_COMM_WORLD)), MPI_COMM_WORLD);
  if (!shared.empty()) {
    if (context.root) std::cerr << kProgram << ": needs one GPU per rank: " << shared << std::endl;
    return -1;
  }
  return device;
}

// Every point, with every strategy it may plan among, fits on the GPU (exit 2 naming the estimate otherwise).
void require_fit(const Config& config, const std::vector<Config>& points) {
  for (const auto& point : points) {
    for (const auto& sync : point.plan_mode == PlanMode::kAuto || config.calibrate
             ? point.planned_syncs()
             : std::vector<std::string>{point.sync}) {
      auto planned = point;
      planned.sync = sync;
      const FamilyRow& row = point.family_row();
      ob::require_fits_on_device(row.fit_option, row.describe(point.model_spec()), planned.device_bytes());
    }
  }
}

// --power: NVML's monitor where every rank has one (null otherwise, said on stderr).
std::unique_ptr<ob::PowerMonitor> power_monitor(const Config& config, int device, const ob::PhaseContext& context,
                                                ob::SteadyClock::time_point origin) {
  if (!config.power) return nullptr;
  auto power = std::make_unique<ob::PowerMonitor>(device, context.rank, origin);
  int available = power->available(), everywhere = 0;
  MPI_CHECK(MPI_Allreduce(&available, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (everywhere) return power;
  if (context.root || !available) {
    std::cerr << "phase4: rank " << context.rank << ": power: unavailable ("
              << (available ? "not on every rank" : power->why()) << ")" << std::endl;
  }
  return nullptr;
}

// What the metadata and the console say about the run.
void describe(const Config& config, const SweepResult& sweep, const ob::PowerMonitor* power, bool asked_for_power,
              const ob::PhaseContext& context, ob::PhaseResult& result) {
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  result.meta = {{"clock", "cuda_event"},
                 {"nccl_nvls_enable", nvls ? nvls : "unset"},
                 {"power",
                  power                 ? "nvml, every 20 ms"
                      : asked_for_power ? "unavailable"
                                        : "off"}};
  if (sweep.measured) {
    result.meta["calibration"] = context.paths.calibration_json;
    result.extra_files.emplace_back(context.paths.calibration_json, sweep.measured->to_json().dump(2) + "\n");
    result.notes.push_back("# calibration: " + context.paths.calibration_json);
  }
  if (!config.calibrations.empty()) {
    result.meta["calibration"] = config.calibrations.size() == 1 ? nlohmann::json(config.calibrations.front())
                                                                 : nlohmann::json(config.calibrations);
  }
  if (config.shuffle) result.meta["order_seed"] = config.order_seed;
  if (config.emulate_nodes > 1) result.meta["emulated_nodes"] = config.emulate_nodes;
  if (sweep.order.size() > 1) result.meta["point_order"] = sweep.order;
  const std::string model = config.family_row().describe(config.model_spec());
  result.header = std::string(kProgram) + ": " + std::to_string(context.ranks) + " rank(s), " + model + ", " +
      (config.tf32 ? "TF32" : "fp32") + " GEMMs, median of " + std::to_string(config.common.iters) +
      (config.mode == RunMode::kInterference ? " passes" : " steps") + ", slowest rank (CUDA events)";
  result.columns = console_columns(config);
}

// --nccl-path: this process's NCCL log, to a file of its own from the first NCCL call on.
std::string start_nccl_log(const Config& config) {
  if (!config.nccl_path) return "";
  const auto file = std::filesystem::temp_directory_path() / ("overlap-nccl-" + std::to_string(getpid()) + ".log");
  for (const auto& [name, value] : nccl_log_environment(file.string())) setenv(name.c_str(), value.c_str(), 1);
  return file.string();
}

// What the log says, into the metadata (rank 0's account); the file removed.
void read_nccl_log(const std::string& file, ob::PhaseResult& result) {
  if (file.empty()) return;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  result.meta["nccl_path"] = parse_nccl_log(text.str()).to_json();
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
}

}  // namespace

std::atomic<ncclComm_t>& live_comm() {
  static std::atomic<ncclComm_t> comm{nullptr};
  return comm;
}

std::variant<int, ob::PhaseResult> run_job(Config& config, const ob::PhaseContext& context) {
  apply_transport(config.transport, config.socket_threads, config.socks_per_thread);  // before the first NCCL call
  const int node = node_of_rank(context.rank, context.ranks, config.emulate_nodes);
  if (config.emulate_nodes > 1) setenv("NCCL_HOSTID", emulated_host_id(node).c_str(), 1);
  const std::string nccl_log = start_nccl_log(config);
  const int device = choose_gpu(context);
  if (device < 0) return ob::kExitSkipped;
  auto points = config.run_order();
  require_fit(config, points);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const auto calibrations = load_calibrations(config, context.ranks, prop.name, MPI_COMM_WORLD);
  for (std::size_t i = 0; i < calibrations.size(); ++i) {
    const auto doubt = calibrations[i].negative_slowdown();
    if (context.progress && !doubt.empty()) {
      *context.progress << "phase4: warning: --calibration " << config.calibrations[i] << ": " << doubt << std::endl;
    }
  }
  require_sm_margin(points);
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const auto origin = ob::SteadyClock::now();
  const auto power = power_monitor(config, device, context, origin);
  const bool asked_for_power = config.power;
  config.power = power != nullptr;  // energy columns only where power is measured
  for (auto& point : points) point.power = config.power;
  if (context.progress && context.ranks == 1) {
    *context.progress << "phase4: 1 rank: the all-reduces move no data (comm is a no-op)" << std::endl;
  }
  const auto sweep = run_sweep(points, context.rank, context.ranks, MPI_COMM_WORLD, origin, power.get(), live_comm(),
                               context.progress, calibrations, config.calibrate);
  ob::PhaseResult result;
  result.rows = sweep.rows;
  result.events = sweep.events;
  result.failure = sweep.failure;
  result.device = ob::cuda_metadata(device);
  if (power) {
    const auto samples = ob::gather_power(power->samples(), MPI_COMM_WORLD);
    result.power = ob::power_csv(samples);
    result.notes.push_back("# power: " + context.paths.power_csv + " (" + std::to_string(samples.size()) + " samples)");
  }
  describe(config, sweep, power.get(), asked_for_power, context, result);
  read_nccl_log(nccl_log, result);
  return result;
}

}  // namespace phase4
