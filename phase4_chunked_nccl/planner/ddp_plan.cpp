// The planner's DDP: which calibrated strategy predicts PyTorch DDP's all-reduces, and DDP's best bucket cap
// (planner.hpp).
#include <algorithm>
#include <cmath>

#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {

// The strategy DDP's buckets are predicted with: nccl's all-reduces where calibrated, else the first all-reduce
// strategy's: one whose schedule the planner's own pipeline models (null: none).
const StrategyCalibration* ddp_like(const Calibration& c) {
  if (const auto* plain = c.strategy(reference_sync())) return plain;
  for (const auto& s : c.strategies) {
    const ScheduleRow& schedule = schedule_of(s.sync);
    if (schedule.parts.empty() && !schedule.planned) return &s;
  }
  return nullptr;
}

// DDP's plan for a cap as PyTorch assigns it (whole tensors, a 1 MiB first bucket: plan_like_ddp); the cap
// predicted best, and its step (NaN and NaN: no all-reduce strategy calibrated). DDP's default of 25 MiB unless
// another cap is predicted faster by more than a millionth: caps below the largest tensors often give the same
// buckets.
double best_ddp_cap(const Calibration& c, const Target& target, double* best_ms, double min_cap_mb) {
  const StrategyCalibration* found = ddp_like(c);
  if (!found) return *best_ms = std::nan("");
  const StrategyCalibration& s = *found;
  const GradientLayout layout = c.layout();
  auto step_ms = [&](double cap) { return predict(c, s, plan_like_ddp(layout, cap), target).step_ms; };
  double best_cap = 25;  // DDP's default, or the least candidate of at least min_cap_mb above it (else the largest)
  if (min_cap_mb > best_cap) {
    const auto above =
        std::find_if(kCandidateCapsMb.begin(), kCandidateCapsMb.end(), [&](double cap) { return cap >= min_cap_mb; });
    best_cap = above == kCandidateCapsMb.end() ? kCandidateCapsMb.back() : *above;
  }
  *best_ms = step_ms(best_cap);
  for (double cap : kCandidateCapsMb) {
    if (cap < min_cap_mb) continue;
    const double ms = step_ms(cap);
    if (ms < *best_ms * (1 - 1e-6)) *best_ms = ms, best_cap = cap;
  }
  return best_cap;
}

}  // namespace phase4
