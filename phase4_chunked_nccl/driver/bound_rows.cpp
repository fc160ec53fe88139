#include "phase4_chunked_nccl/driver/bound_rows.hpp"

#include <algorithm>
#include <cmath>

namespace phase4 {

namespace {

double spread(const ob::SummaryRow& row) { return std::isnan(row.time_ci_rel) ? 0.0 : row.time_ci_rel; }

// A comm-only step whose host was still enqueuing its collectives for at least this share of it ran at the host's
// pace.
constexpr double kLaunchBoundShare = 0.5;

// A comm-only step whose collectives took under this each on average (ms) ran at the GPU's launch latency: one kernel
// launch and its stream wait per bucket, paid back to back on an otherwise idle GPU and partly hidden beside compute.
constexpr double kLatencyBoundBucketMs = 0.005;

// The comm-only row, where that run's per-bucket times hold launch costs that an overlapped step hides while the GPU
// computes, so a schedule replaying them is no lower bound: the host still enqueuing (on one rank with 0.2 MB buckets
// the bound lay 2-10 % above the step), or each collective no longer than a launch (one H200 rank, 541 buckets of
// 2.9 us: the bound 8.6 % above the step, the host enqueuing for 46 % of it). Null otherwise (and with --graph, which
// times no enqueue).
const ob::SummaryRow* launch_bound_comm(const std::vector<ob::SummaryRow>& rows) {
  const ob::SummaryRow* comm = ob::find_row(rows, ob::Mode::kComm);
  if (!comm) return nullptr;
  const bool host = comm->number("enqueue_span_ms_p50") >= kLaunchBoundShare * comm->time_ms.p50;
  const double buckets = comm->number("buckets");
  const bool latency = buckets > 0 && comm->time_ms.p50 / buckets < kLatencyBoundBucketMs;
  return host || latency ? comm : nullptr;
}

}  // namespace

void label_bounds(std::vector<ob::SummaryRow>& rows, bool bounded, std::ostream* progress) {
  const ob::SummaryRow* overlap = ob::find_row(rows, ob::Mode::kOverlap);
  const ob::SummaryRow* compute = ob::find_row(rows, ob::Mode::kCompute);
  if (overlap && compute && progress &&
      overlap->time_ms.p50 * (1 + spread(*overlap)) < compute->time_ms.p50 * (1 - spread(*compute))) {
    *progress << "phase4: warning: the overlapped step " << overlap->time_ms.p50 << " ms is faster than its "
              << "compute-only step " << compute->time_ms.p50
              << " ms beyond their spreads: the two did not do the same work (METRICS.md, compute)" << std::endl;
  }
  const ob::SummaryRow* comm = bounded ? launch_bound_comm(rows) : nullptr;
  if (comm) {
    bounded = false;
    if (progress) {
      *progress << "phase4: note: the comm-only step's " << comm->number("buckets") << " collectives took "
                << comm->time_ms.p50 << " ms, the host enqueuing them for " << comm->number("enqueue_span_ms_p50")
                << ": they ran at the pace of their launches, so the bound rows are a model here (METRICS.md, "
                << "bound_kind)" << std::endl;
    }
  }
  // A bound is made of the compute-only and comm-only runs' medians: it moves as far as they do, and carries the
  // larger of their spreads as its own (an unsteady compute-only run lifted a 2 x H200 bound 12 % above its step).
  const ob::SummaryRow* comm_only = ob::find_row(rows, ob::Mode::kComm);
  const double inputs = std::max(compute ? spread(*compute) : 0.0, comm_only ? spread(*comm_only) : 0.0);
  for (auto& row : rows) {
    if (row.mode != ob::Mode::kBound && row.mode != ob::Mode::kBoundRef) continue;
    row.set("bound_kind", bounded ? "bound" : "model");
    row.time_ci_rel = inputs;
    if (!bounded || !overlap) continue;
    if (row.time_ms.p50 * (1 - inputs) > overlap->time_ms.p50 * (1 + spread(*overlap)) && progress) {
      *progress << "phase4: warning: " << ob::mode_name(row.mode) << " " << row.time_ms.p50
                << " ms is above the overlapped step " << overlap->time_ms.p50
                << " ms beyond both spreads: the isolated parts are not this schedule's (METRICS.md, bound_kind)"
                << std::endl;
    }
  }
}

}  // namespace phase4
