#include "common/overlap_rows.hpp"

#include <cmath>

#include "common/metrics.hpp"
#include "common/mpi_check.hpp"
#include "common/stats.hpp"

namespace ob {

SummaryRow mode_row(const SummaryRow& base, const ModeSamples& samples, const std::function<void(SummaryRow&)>& own) {
  SummaryRow row = base;
  row.mode = samples.mode;
  const bool mpi = samples.comm != MPI_COMM_NULL;
  row.set_times(mpi ? max_across_ranks(samples.iter_ms, samples.comm) : samples.iter_ms);
  if (own) own(row);
  if (samples.mode == Mode::kComm && samples.allreduce_bytes > 0) {
    int ranks = 1;
    if (mpi) MPI_CHECK(MPI_Comm_size(samples.comm, &ranks));
    const double algbw = algbw_GBps(samples.allreduce_bytes, row.time_ms.p50);
    row.set("algbw_GBps", algbw).set("busbw_GBps", allreduce_busbw_GBps(algbw, ranks));
  }
  if (samples.wrong) row.set("wrong", *samples.wrong);
  return row;
}

void derive_overlap_rows(std::vector<SummaryRow>& rows, const SummaryRow& base, const OverlapInputs& inputs) {
  const SummaryRow* compute = find_row(rows, Mode::kCompute);
  const SummaryRow* comm = find_row(rows, Mode::kComm);
  std::vector<SummaryRow> derived;
  if (compute && comm) {
    const double t_comp = compute->time_ms.p50, t_comm = comm->time_ms.p50;
    const SummaryRow* seq = find_row(rows, Mode::kSeq);
    const double t_seq = seq ? seq->time_ms.p50 : t_comp + t_comm;
    const double isolated = inputs.compute_time_field.empty() ? NAN : compute->number(inputs.compute_time_field);
    for (auto& row : rows) {
      if (!is_overlapped(row.mode)) continue;
      const double t_ovl = row.time_ms.p50;
      row.set("speedup", speedup(t_seq, t_ovl))
          .set("overlap_efficiency", overlap_efficiency(t_comp, t_comm, t_ovl))
          .set("overlap_pct", overlap_pct(t_ovl, t_comp, t_comm));
      // 95 % intervals over the iterations (bootstrap), where every row involved kept its samples: medians of
      // compute, comm, overlapped and (speedup) seq, in that order.
      if (!compute->samples.empty() && !comm->samples.empty() && !row.samples.empty()) {
        const std::vector<std::vector<double>> three = {compute->samples, comm->samples, row.samples};
        const auto efficiency = bootstrap_interval(
            three, [](const std::vector<double>& m) { return overlap_efficiency(m[0], m[1], m[2]); });
        const auto hidden =
            bootstrap_interval(three, [](const std::vector<double>& m) { return overlap_pct(m[2], m[0], m[1]); });
        row.set("overlap_efficiency_ci_lo", efficiency.lo)
            .set("overlap_efficiency_ci_hi", efficiency.hi)
            .set("overlap_efficiency_resolved", resolved("overlap_efficiency", efficiency.lo, efficiency.hi));
        row.set("overlap_pct_ci_lo", hidden.lo)
            .set("overlap_pct_ci_hi", hidden.hi)
            .set("overlap_pct_resolved", resolved("overlap_pct", hidden.lo, hidden.hi));
        if (seq && !seq->samples.empty()) {
          const auto faster = bootstrap_interval({seq->samples, row.samples},
                                                 [](const std::vector<double>& m) { return speedup(m[0], m[1]); });
          row.set("speedup_ci_lo", faster.lo)
              .set("speedup_ci_hi", faster.hi)
              .set("speedup_resolved", resolved("speedup", faster.lo, faster.hi));
        }
      }
      if (!inputs.compute_time_field.empty()) {
        row.set("compute_slowdown", compute_slowdown(row.number(inputs.compute_time_field), isolated));
      }
    }
    derived.push_back(derived_row(Mode::kIdeal, ideal_ms(t_comp, t_comm), base));
  }
  if (!std::isnan(inputs.bound_ms)) derived.push_back(derived_row(Mode::kBound, inputs.bound_ms, base));
  if (!std::isnan(inputs.bound_ref_ms)) derived.push_back(derived_row(Mode::kBoundRef, inputs.bound_ref_ms, base));
  rows.insert(rows.end(), derived.begin(), derived.end());
}

void CheckLog::mode_checks(Mode mode, bool ranks_agree, std::uint64_t wrong, const std::string& first_wrong) {
  if (!ranks_agree) fail(std::string(mode_name(mode)) + ": weights differ between ranks");
  if (wrong > 0) {
    fail("comm: " + std::to_string(wrong) + " elements of the all-reduced pattern are wrong" +
         (first_wrong.empty() ? "" : " (" + first_wrong + ")"));
  }
}

}  // namespace ob
