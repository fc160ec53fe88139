#include "phase4_chunked_nccl/driver/bound_rows.hpp"

#include <cmath>

namespace phase4 {

void label_bounds(std::vector<ob::SummaryRow>& rows, bool bounded, std::ostream* progress) {
  const ob::SummaryRow* overlap = ob::find_row(rows, ob::Mode::kOverlap);
  for (auto& row : rows) {
    if (row.mode != ob::Mode::kBound && row.mode != ob::Mode::kBoundRef) continue;
    row.set("bound_kind", bounded ? "bound" : "model");
    if (!bounded || !overlap) continue;
    const double spread = std::isnan(overlap->time_ci_rel) ? 0.0 : overlap->time_ci_rel;
    if (row.time_ms.p50 > overlap->time_ms.p50 * (1 + spread) && progress) {
      *progress << "phase4: warning: " << ob::mode_name(row.mode) << " " << row.time_ms.p50
                << " ms is above the overlapped step " << overlap->time_ms.p50
                << " ms beyond its spread: the isolated parts are not this schedule's (METRICS.md, bound_kind)"
                << std::endl;
    }
  }
}

}  // namespace phase4
