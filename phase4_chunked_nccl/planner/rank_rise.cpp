#include "phase4_chunked_nccl/planner/rank_rise.hpp"

#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {
namespace {

double update_traffic(bool sums, int ranks) { return (sums ? 1.0 : 1.0 / ranks) + 2.0 / ranks; }

}  // namespace

double update_rise(const std::string& sync, int calibrated, int ranks) {
  const SyncRow* row = find_sync(sync);
  const bool sums = row && row->update_sums_ranks;
  return update_traffic(sums, ranks) / update_traffic(sums, calibrated);
}

double copies_rise(const StrategyCalibration& strategy, double bytes, int calibrated, int ranks) {
  const auto [latency, slope] = strategy.comm_line_at(bytes);
  const auto copies_ms = [&, latency = latency, slope = slope](int n) {
    return latency * (n - 1) / (calibrated - 1) +
        slope * bytes * (static_cast<double>(n - 1) / n) / (static_cast<double>(calibrated - 1) / calibrated);
  };
  return copies_ms(ranks) / copies_ms(calibrated);
}

}  // namespace phase4
