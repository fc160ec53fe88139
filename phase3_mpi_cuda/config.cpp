#include "phase3_mpi_cuda/config.hpp"

#include <omp.h>

#include <algorithm>

#include "common/errors.hpp"

namespace phase3 {

void add_options(CLI::App& app, Config& config) {
  config.common.iters = 10;
  ob::add_common_options(app, config.common);
  ob::add_fault_options(app, config.fault);
  app.add_option("--batch", config.batch, "Global batch (rows of x), split over the ranks")
      ->transform(ob::size_suffix())
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--in", config.in, "Input features (rows of W and dW)")
      ->transform(ob::size_suffix())
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--out", config.out, "Output features (columns of W)")
      ->transform(ob::size_suffix())
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--lr", config.lr, "SGD learning rate")->check(ob::finite_in(0, 1e9))->capture_default_str();
  app.add_option("--chunks", config.chunks, "Row blocks of dW, each all-reduced as soon as it is computed")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--strategy", config.strategy, "seq|thread|nonblocking|all (compute-only and comm-only always run)")
      ->check(CLI::IsMember({"seq", "thread", "nonblocking", "all"}))
      ->capture_default_str();
  app.add_option("--device", config.device, "Where gradients are computed: cpu|gpu|auto")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  app.add_option("--kernel", config.kernel, "GPU GEMM (phase 1's): naive|tiled|cublas")
      ->check(CLI::IsMember({"naive", "tiled", "cublas"}))
      ->capture_default_str();
  app.add_flag("--cuda-aware", config.cuda_aware, "All-reduce device buffers directly (needs a CUDA-aware MPI)");
  app.add_option("--threads", config.threads, "OpenMP threads per rank: compute team + 1 comm thread (0: all)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
}

void validate(const Config& config) {
  ob::parse_fault(config.fault.inject_fault);
  ob::require(!config.cuda_aware || config.device != "cpu", "--cuda-aware", "--device cpu",
              "--cuda-aware needs GPU compute (--device gpu or auto)");
  ob::require(1.0 * config.in * config.out < 2147483647.0, "--in", std::to_string(config.in),
              "in * out must stay below 2^31 (MPI counts)");
  const double floats = 1.0 * config.batch * (2.0 * config.in + 3.0 * config.out) + 4.0 * config.in * config.out;
  ob::require_fits_in_host_memory("--batch", std::to_string(config.batch), 4.0 * floats);
}

std::vector<ob::Mode> Config::modes() const {
  std::vector<ob::Mode> modes = {ob::Mode::kCompute, ob::Mode::kComm};
  if (strategy == "all") {
    modes.insert(modes.end(), {ob::Mode::kSeq, ob::Mode::kThread, ob::Mode::kNonblocking});
  } else {
    modes.push_back(ob::parse_mode(strategy));
  }
  return ob::in_run_order(modes);
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
