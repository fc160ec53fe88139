// The one derivation of the overlap rows (METRICS.md): from the measured rows of a run (one per mode, times are
// the slowest rank's per-iteration samples) to speedup, overlap_efficiency, overlap_pct and compute_slowdown on every
// overlapped row, then the derived rows ideal, bound and bound_ref. Every phase calls it; none derives on its own.
// The check results of a run are gathered the same way: CheckLog keeps the first failure.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/summary.hpp"

namespace ob {

struct OverlapInputs {
  // The row field holding each mode's compute time per iteration (its median): compute_slowdown compares an
  // overlapped row's against the compute row's. Empty: no slowdown.
  std::string compute_time_field;
  // Schedule bounds the phase computed from its isolated tasks (NaN: no such row).
  double bound_ms = std::numeric_limits<double>::quiet_NaN();
  double bound_ref_ms = std::numeric_limits<double>::quiet_NaN();
};

// Appends to `rows`: the metrics on overlapped rows and the ideal row when compute and comm rows exist; the bound
// and bound_ref rows when given. T_seq is the seq row's median, or T_comp + T_comm without one. `base` carries
// the configuration of the derived rows.
void derive_overlap_rows(std::vector<SummaryRow>& rows, const SummaryRow& base, const OverlapInputs& inputs);

// The outcome of a run's checks: the first failure message wins, later ones are dropped ("" is no failure).
class CheckLog {
 public:
  void fail(const std::string& message) {
    if (first_.empty()) first_ = message;
  }
  // The usual per-mode checks: weights equal on every rank; `wrong` elements (already summed over ranks) of an
  // exact all-reduce pattern, with where the first one is.
  void mode_checks(Mode mode, bool ranks_agree, std::uint64_t wrong, const std::string& first_wrong);
  bool ok() const { return first_.empty(); }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace ob
