#include "common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ob {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double ideal_ms(double t_comp, double t_comm) { return std::max(t_comp, t_comm); }

double overlap_efficiency(double t_comp, double t_comm, double t_ovl) {
  const double shorter = std::min(t_comp, t_comm);
  return shorter > 0 ? (t_comp + t_comm - t_ovl) / shorter : kNaN;
}

double speedup(double t_seq, double t_ovl) { return t_ovl > 0 ? t_seq / t_ovl : kNaN; }

double overlap_pct(double t_ovl, double t_comp, double t_comm) {
  if (!(t_comm > 0)) return kNaN;
  return std::clamp(100.0 * (1.0 - (t_ovl - t_comp) / t_comm), 0.0, 100.0);
}

double compute_slowdown(double overlapped_total, double isolated_total) {
  return isolated_total > 0 ? (overlapped_total - isolated_total) / isolated_total : kNaN;
}

double algbw_GBps(double bytes, double time_ms) { return time_ms > 0 ? bytes / (time_ms * 1e-3) / 1e9 : kNaN; }

double allreduce_busbw_GBps(double algbw, int ranks) {
  return ranks > 0 ? algbw * 2.0 * (ranks - 1) / ranks : kNaN;
}

double pipeline_bound_ms(const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after) {
  if (ready_after.size() != comm_ms.size()) {
    throw std::invalid_argument("pipeline_bound_ms: one ready index per communication task is needed");
  }
  for (std::size_t k = 0; k < ready_after.size(); ++k) {
    const int ready = ready_after[k];
    if (ready < 0 || ready >= static_cast<int>(compute_ms.size()) || (k > 0 && ready < ready_after[k - 1])) {
      throw std::invalid_argument("pipeline_bound_ms: ready index " + std::to_string(ready) + " of task " +
                                  std::to_string(k) + " is out of order or range");
    }
  }
  double compute_end = 0.0, comm_end = 0.0;
  std::size_t next = 0;
  for (std::size_t i = 0; i < compute_ms.size(); ++i) {
    compute_end += compute_ms[i];
    for (; next < comm_ms.size() && ready_after[next] == static_cast<int>(i); ++next) {
      comm_end = std::max(comm_end, compute_end) + comm_ms[next];
    }
  }
  return std::max(compute_end, comm_end);
}

double schedule_bound_ms(double head_ms, const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after, double tail_ms, double t_comp, double t_comm) {
  double tasks = head_ms + tail_ms;
  for (double c : compute_ms) tasks += c;
  const double bound = head_ms + pipeline_bound_ms(compute_ms, comm_ms, ready_after) + tail_ms;
  return std::max(bound + std::max(0.0, t_comp - tasks), t_comm);
}

double equal_chunk_pipeline_ms(int chunks, double chunk_compute_ms, double chunk_comm_ms) {
  if (chunks < 1) throw std::invalid_argument("equal_chunk_pipeline_ms: chunks must be >= 1");
  return chunk_compute_ms + (chunks - 1) * std::max(chunk_compute_ms, chunk_comm_ms) + chunk_comm_ms;
}

}  // namespace ob
