// What a rank's modes lean on beside the step (strategies.hpp): the cores it may run on and whether its compute
// thread may yield them, and the checks' exact patterns and weight hashes compared across ranks.
#include <mpi.h>
#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/mpi_check.hpp"
#include "common/verify.hpp"
#include "phase3_mpi_cuda/strategies.hpp"

namespace phase3 {

bool compute_can_yield() {
#ifdef __linux__
  static const bool can = [] {
    bool back = false;
    std::thread probe([&] {
      int policy = SCHED_OTHER;
      sched_param param{}, idle{};
      back = pthread_getschedparam(pthread_self(), &policy, &param) == 0 &&
          pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) == 0 &&
          pthread_setschedparam(pthread_self(), policy, &param) == 0;
    });
    probe.join();
    return back;
  }();
  return can;
#else
  return false;
#endif
}

int rank_cores() {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::uint64_t weights_hash(const std::vector<float>& w) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
  for (std::size_t i = 0; i < w.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

bool same_on_every_rank(std::uint64_t value, MPI_Comm comm) {
  std::uint64_t lo = 0, hi = 0;
  MPI_CHECK(MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, comm));
  MPI_CHECK(MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, comm));
  return lo == hi;
}

std::vector<float> comm_pattern(const Config& config, int rank) {
  std::vector<float> values(static_cast<std::size_t>(config.in) * config.out);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = ob::exact_pattern(config.common.seed + 7919u * (rank + 1), i);
  return values;
}

std::vector<float> comm_pattern_sum(const Config& config, int ranks) {
  std::vector<float> sum(static_cast<std::size_t>(config.in) * config.out, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const auto values = comm_pattern(config, r);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
  }
  return sum;
}

}  // namespace phase3
