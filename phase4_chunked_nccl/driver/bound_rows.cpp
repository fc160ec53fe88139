#include "phase4_chunked_nccl/driver/bound_rows.hpp"

#include <cmath>

namespace phase4 {

namespace {

double spread(const ob::SummaryRow& row) { return std::isnan(row.time_ci_rel) ? 0.0 : row.time_ci_rel; }

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
  for (auto& row : rows) {
    if (row.mode != ob::Mode::kBound && row.mode != ob::Mode::kBoundRef) continue;
    row.set("bound_kind", bounded ? "bound" : "model");
    if (!bounded || !overlap) continue;
    if (row.time_ms.p50 > overlap->time_ms.p50 * (1 + spread(*overlap)) && progress) {
      *progress << "phase4: warning: " << ob::mode_name(row.mode) << " " << row.time_ms.p50
                << " ms is above the overlapped step " << overlap->time_ms.p50
                << " ms beyond its spread: the isolated parts are not this schedule's (METRICS.md, bound_kind)"
                << std::endl;
    }
  }
}

}  // namespace phase4
