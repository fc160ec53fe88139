#include "phase3_mpi_cuda/config.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/csv_writer.hpp"
#include "common/iteration.hpp"
#include "common/errors.hpp"
#include "common/timer.hpp"

namespace phase3 {

void add_options(CLI::App& app, Config& config) {
  config.common.iters = 10;
  ob::add_common_options(app, config.common);
  ob::add_fault_options(app, config.fault);
  app.add_option("--batch", config.batch,
                 "Global batch (rows of x), split over the ranks; auto: the rows that make the backward chunks as long "
                 "as the all-reduce (measured first)")
      ->transform(CLI::Validator(
          [](std::string& text) {
            if (text == "auto") {
              text = "0";
              return std::string();
            }
            return ob::size_suffix()(text);
          },
          "SIZE[K|M|G]|auto", "batch"))
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  ob::add_size_option(app, "--in", config.in, "Input features (rows of W and dW)", 1 << 20);
  ob::add_size_option(app, "--out", config.out, "Output features (columns of W)", 1 << 20);
  ob::add_checked_option(app, "--lr", config.lr, "SGD learning rate", ob::finite_in(0, 1e9));
  ob::add_checked_option(app, "--chunks", config.chunks, "Row blocks of dW, each all-reduced as soon as it is computed",
                         CLI::Range(1, 1 << 20));
  ob::add_checked_option(app, "--strategy", config.strategy,
                         "seq|thread|nonblocking|progress|all (compute-only and comm-only always run)",
                         CLI::IsMember({"seq", "thread", "nonblocking", "progress", "all"}));
  ob::add_checked_option(
      app, "--compute", config.compute,
      "gemm: the model's GEMMs; busy: OSU's dummy compute, a wall-clock busy loop per chunk as long as "
      "the chunk's pure all-reduce (osu_iallreduce's sizing)",
      CLI::IsMember({"gemm", "busy"}));
  ob::add_checked_option(
      app, "--probes", config.probes,
      "--compute busy: MPI_Test calls spread over each chunk's busy loop in the nonblocking strategy "
      "(osu_iallreduce -t)",
      CLI::Range(0, 1000000));
  ob::add_checked_option(app, "--busy-us", config.busy_us,
                         "--compute busy: every chunk's target in microseconds instead of its measured all-reduce time",
                         ob::finite_in(0, 1e9));
  ob::add_checked_option(app, "--backoff-us", config.backoff_us,
                         "progress strategy on a core it cannot run first on (no root): the longest sleep (us) of its "
                         "progress thread between MPI_Test rounds that completed nothing (0: spin)",
                         ob::finite_in(0, 1e6));
  app.add_option("--grad-mb", config.grad_mb,
                 "Gradient sizes to run one after another, MiB (e.g. 1,4,16): out = MiB * 2^20 / (4 * in)")
      ->delimiter(',')
      ->check(ob::finite_in(1e-6, 2048));
  ob::add_checked_option(app, "--device", config.device, "Where gradients are computed: cpu|gpu|auto",
                         CLI::IsMember({"cpu", "gpu", "auto"}));
  ob::add_checked_option(app, "--kernel", config.kernel, "GPU GEMM (phase 1's): naive|tiled|cublas",
                         CLI::IsMember({"naive", "tiled", "cublas"}));
  app.add_flag("--cuda-aware", config.cuda_aware, "All-reduce device buffers directly (needs a CUDA-aware MPI)");
  app.add_flag("--share-gpu", config.share_gpu,
               "Where a node has fewer GPUs than ranks, let its ranks share them (they time-slice one GPU's "
               "compute); without it --device gpu refuses and --device auto computes on the CPU");
  ob::add_checked_option(app, "--threads", config.threads,
                         "OpenMP threads per rank: compute team + 1 comm thread (0: all)", CLI::Range(0, 4096));
}

void validate(const Config& config) {
  ob::parse_fault(config.fault.inject_fault);
  ob::require_thread_count(config.threads);
  // Per rank, mode and timed step: each chunk's compute and all-reduce, and its hand-offs.
  ob::require_timeline_fits("--chunks", std::to_string(config.chunks),
                            4.0 * config.chunks * ob::most_timed_iters(config.common.iters, config.common.min_time_ms) *
                                static_cast<double>(config.modes().size()));
  if (config.busy()) {
    ob::require(config.device != "gpu", "--device", config.device,
                "--compute busy runs on the host (its busy loop computes nothing): use cpu or auto");
    ob::require(config.batch != 0, "--batch", "auto", "--compute busy has no GEMM to size: leave --batch out");
    ob::require(config.busy_us == 0 || config.busy_us / 1000 >= clock_resolution_ms(), "--busy-us",
                ob::format_number(config.busy_us),
                "below steady_clock's resolution on this machine (" +
                    ob::format_number(clock_resolution_ms() * 1000, 3) + " us)");
    // A step busy for longer than the watchdog waits would be called a stall: refused before it is started.
    const double step_s = config.busy_us * 1e-6 * config.chunks;
    ob::require(step_s < config.fault.timeout_s / 2, "--busy-us", ob::format_number(config.busy_us),
                "a step of --chunks busy loops must take under half of --timeout-s (" +
                    ob::format_number(config.fault.timeout_s) + " s), or the watchdog ends it as a stall");
    const double steps = (config.common.iters + 4.0 * std::max(config.common.warmup, 6)) * config.modes().size();
    ob::require_stated_length("--busy-us", ob::format_number(config.busy_us),
                              (steps * step_s + config.modes().size() * config.common.min_time_ms / 1000) *
                                  std::max<std::size_t>(1, config.grad_mb.size()));
  } else {
    ob::require(config.probes == 0, "--probes", std::to_string(config.probes), "needs --compute busy");
    ob::require(config.busy_us == 0, "--busy-us", ob::format_number(config.busy_us), "needs --compute busy");
  }
  ob::require(!config.cuda_aware || config.device != "cpu", "--cuda-aware", "--device cpu",
              "--cuda-aware needs GPU compute (--device gpu or auto)");
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  // Open MPI 4's CUDA-aware support covers point-to-point and blocking collectives only (its FAQ, "Which MPI APIs
  // do NOT work with CUDA-aware?"): an MPI_Iallreduce of device memory would be reduced by the host, and crash.
  ob::require(!config.cuda_aware || config.strategy == "seq" || config.strategy == "thread", "--strategy",
              config.strategy,
              "--cuda-aware under Open MPI 4 needs seq or thread: its CUDA-aware support covers blocking collectives "
              "only (nonblocking and progress use MPI_Iallreduce)");
#endif
  ob::require(!config.share_gpu || config.device != "cpu", "--share-gpu", "--device cpu",
              "--share-gpu shares GPUs among ranks: it needs GPU compute (--device gpu or auto)");
  ob::require(!config.share_gpu || !config.busy(), "--share-gpu", "--compute busy",
              "--compute busy runs on the host: it uses no GPU to share");
  for (const double mb : config.grad_mb) {
    const double floats = mb * (1 << 20) / 4;
    ob::require(
        floats == std::floor(floats) && std::fmod(floats, config.in) == 0, "--grad-mb", ob::format_number(mb),
        "a gradient of whole rows: MiB * 2^20 / 4 must be a multiple of --in (" + std::to_string(config.in) + ")");
  }
  for (const auto& point : config.points()) {
    if (config.batch == 0 && !config.busy()) {  // --batch auto: its search times the all-reduce and compute trials
      const double gradient_mb = 4.0 * point.in * point.out / (1 << 20);
      ob::require(gradient_mb <= kMostAutoGradientMb, point.grad_mb.empty() ? "--out" : "--grad-mb",
                  ob::format_number(gradient_mb),
                  "--batch auto sizes gradients of at most " + ob::format_number(kMostAutoGradientMb) +
                      " MiB (its search runs the all-reduce and several "
                      "compute trials before the run); give --batch ROWS");
      Config trial = point;
      trial.batch = kAutoTrialRows;
      ob::require_fits_in_host_memory("--batch", "auto", trial.host_bytes());
    }
    ob::require(1.0 * point.in * point.out < 2147483647.0, point.grad_mb.empty() ? "--in" : "--grad-mb",
                std::to_string(point.in) + "x" + std::to_string(point.out),
                "in * out must stay below 2^31 (MPI counts)");
    ob::require_fits_in_host_memory("--batch", std::to_string(point.batch), point.host_bytes());
  }
}

double Config::host_bytes() const {
  const double floats = 1.0 * batch * (2.0 * in + 3.0 * out) + 4.0 * in * out;
  return 4.0 * floats;
}

std::vector<Config> Config::points() const {
  if (grad_mb.empty()) return {*this};
  std::vector<Config> points;
  for (const double mb : grad_mb) {
    Config point = *this;
    point.grad_mb = {mb};
    point.out = static_cast<int>(std::llround(mb * (1 << 20) / 4 / in));
    points.push_back(point);
  }
  return points;
}

double clock_resolution_ms() {
  static const double resolution = [] {
    auto smallest = ob::SteadyClock::duration::max();
    for (int i = 0; i < 1000; ++i) {
      const auto a = ob::SteadyClock::now();
      auto b = ob::SteadyClock::now();
      while (b == a) b = ob::SteadyClock::now();
      smallest = std::min(smallest, b - a);
    }
    return std::chrono::duration<double, std::milli>(smallest).count();
  }();
  return resolution;
}

std::vector<ob::Mode> Config::modes() const {
  std::vector<ob::Mode> modes = {ob::Mode::kCompute, ob::Mode::kComm};
  if (strategy == "all") {
    modes.insert(modes.end(), {ob::Mode::kSeq, kThread, kNonblocking, kProgress});
  } else {
    modes.push_back(ob::parse_mode(strategy));
  }
  modes = ob::in_run_order(modes);
  if (busy()) std::swap(modes[0], modes[1]);  // comm, compute, ...: the busy loop is sized from the comm run
  return modes;
}

int Config::compute_threads() const {
  const int total = threads > 0 ? threads : omp_get_max_threads();
  return std::max(1, total - 1);
}

Range shard(int rows, int rank, int ranks) {
  const auto at = [&](int r) { return static_cast<int>(static_cast<long long>(rows) * r / ranks); };
  return {at(rank), at(rank + 1)};
}

Range chunk_rows(int rows, int chunk, int chunks) { return shard(rows, chunk, chunks); }

}  // namespace phase3
