// The one derivation of the overlap rows (METRICS.md): from the measured rows of a run (one per mode, times are
// the slowest rank's per-iteration samples) to speedup, overlap_efficiency, overlap_pct and compute_slowdown on every
// overlapped row, then the derived rows ideal, bound and bound_ref. Every phase calls it; none derives on its own.
// Each mode's row is made the same way too (mode_row), and the check results of a run gathered the same way:
// CheckLog keeps the first failure.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <limits>
#include <string>
#include <vector>

#include "common/summary.hpp"

namespace ob {

// One measured mode of a run, as its summary row needs it.
struct ModeSamples {
  Mode mode = Mode::kSeq;
  std::vector<double> iter_ms;  // this rank's (this process's) timed iterations
  MPI_Comm comm = MPI_COMM_NULL;  // the run's ranks (MPI_COMM_NULL: one process)
  double allreduce_bytes = 0;  // > 0: the comm-only row's all-reduce of this many bytes (algbw, busbw)
  std::optional<std::uint64_t> wrong;  // the exact check's wrong elements (over every rank), where one was made
};

// One mode's summary row, made by every phase this way: `base` with the mode and the step times of the slowest rank
// (per iteration, the maximum over the ranks), then the phase's own columns (`own`), then on the comm-only row the
// all-reduce's algorithm and bus bandwidth, and the check's count where one was made.
SummaryRow mode_row(const SummaryRow& base, const ModeSamples& samples,
                    const std::function<void(SummaryRow&)>& own = {});

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
