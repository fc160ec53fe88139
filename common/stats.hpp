// Statistics over per-iteration samples, and the reduction across MPI ranks: the slowest rank's time is the
// iteration time (element-wise max over ranks, then statistics over iterations).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ob {

struct Stats {
  std::size_t count = 0;
  double min = 0, p50 = 0, p95 = 0, max = 0, mean = 0, stddev = 0;
};

// q-th percentile (0..100) by linear interpolation between closest ranks (numpy's default). Throws on empty input.
double percentile(std::vector<double> samples, double q);

// min, p50, p95, max, mean and sample standard deviation (0 for one sample). Throws std::invalid_argument if empty.
Stats summarize(const std::vector<double>& samples);

// Stats of a single derived value (ideal, bound rows): every statistic equals it.
Stats constant_stats(double value);

// Element-wise max of each rank's samples over `comm` (every rank gets the result). All ranks pass equal lengths.
std::vector<double> max_across_ranks(const std::vector<double>& local, MPI_Comm comm);

// The slowest rank's median: max over ranks of each rank's median of `local` (NaN when `local` is empty on every
// rank; all ranks must call it).
double slowest_median(const std::vector<double>& local, MPI_Comm comm);

// The fastest rank's median: min over ranks (NaN likewise). A collective's own time: a rank that reached it before a
// later one times the wait too. A schedule bound replays each rank's own tasks (its local medians) and the
// collectives at this time, and keeps the slowest rank's bound: per-task slowest medians summed put every rank's slow
// tasks into one schedule, above any rank's own (4 x H200, 1024,32,256, nccl: such a "bound" 2.4 % above its step).
double fastest_median(const std::vector<double>& local, MPI_Comm comm);

// 0..n-1 in an order shuffled from `seed`, the same on every machine and compiler: Fisher-Yates (from the last
// position down, each swapped with position mt19937_64() % (i + 1)) over the standard's fully specified mt19937_64
// (std::shuffle's algorithm is the library's own). A sweep's points run in this order (phase 4 --order-seed).
std::vector<std::size_t> shuffled_order(std::size_t n, std::uint64_t seed);

// A count summed over ranks (e.g. wrong elements).
std::uint64_t total_across_ranks(std::uint64_t local, MPI_Comm comm);

// Element-wise sum likewise (used for totals such as per-layer compute time summed over ranks).
std::vector<double> sum_across_ranks(const std::vector<double>& local, MPI_Comm comm);

}  // namespace ob
