#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common/mpi_check.hpp"

namespace ob {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) throw std::invalid_argument("percentile of no samples");
  if (!(q >= 0.0 && q <= 100.0)) throw std::invalid_argument("percentile outside 0..100");
  std::sort(samples.begin(), samples.end());
  const double position = q / 100.0 * static_cast<double>(samples.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, samples.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return samples[lower] + (samples[upper] - samples[lower]) * fraction;
}

Stats summarize(const std::vector<double>& samples) {
  if (samples.empty()) throw std::invalid_argument("statistics of no samples");
  Stats stats;
  stats.count = samples.size();
  const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  stats.min = *lo;
  stats.max = *hi;
  stats.p50 = percentile(samples, 50.0);
  stats.p95 = percentile(samples, 95.0);
  stats.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double squares = 0.0;
    for (double s : samples) squares += (s - stats.mean) * (s - stats.mean);
    stats.stddev = std::sqrt(squares / static_cast<double>(samples.size() - 1));
  }
  return stats;
}

Stats constant_stats(double value) {
  Stats stats;
  stats.count = 1;
  stats.min = stats.p50 = stats.p95 = stats.max = stats.mean = value;
  return stats;
}

namespace {
std::vector<double> reduce_across_ranks(const std::vector<double>& local, MPI_Op op, MPI_Comm comm) {
  std::vector<double> result(local.size());
  MPI_CHECK(MPI_Allreduce(local.data(), result.data(), static_cast<int>(local.size()), MPI_DOUBLE, op, comm));
  return result;
}

// Each rank's median of `local`, reduced over ranks by `op` (MPI_MAX or MPI_MIN); a rank without samples passes the
// op's identity, and NaN comes back where no rank had any.
double median_across_ranks(const std::vector<double>& local, MPI_Op op, MPI_Comm comm) {
  const double none = (op == MPI_MAX ? -1 : 1) * std::numeric_limits<double>::infinity();
  const double mine = local.empty() ? none : summarize(local).p50;
  const double reduced = reduce_across_ranks({mine}, op, comm)[0];
  return std::isinf(reduced) ? std::numeric_limits<double>::quiet_NaN() : reduced;
}
}  // namespace

double slowest_median(const std::vector<double>& local, MPI_Comm comm) {
  return median_across_ranks(local, MPI_MAX, comm);
}

double fastest_median(const std::vector<double>& local, MPI_Comm comm) {
  return median_across_ranks(local, MPI_MIN, comm);
}

std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 generator(seed);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[generator() % i]);
  return order;
}

std::uint64_t total_across_ranks(std::uint64_t local, MPI_Comm comm) {
  std::uint64_t total = 0;
  MPI_CHECK(MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm));
  return total;
}

std::vector<double> max_across_ranks(const std::vector<double>& local, MPI_Comm comm) {
  return reduce_across_ranks(local, MPI_MAX, comm);
}

std::vector<double> sum_across_ranks(const std::vector<double>& local, MPI_Comm comm) {
  return reduce_across_ranks(local, MPI_SUM, comm);
}

}  // namespace ob
