#include "common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "common/stats.hpp"

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

double allreduce_busbw_GBps(double algbw, int ranks) { return ranks > 0 ? algbw * 2.0 * (ranks - 1) / ranks : kNaN; }

void run_pipeline(const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                  const std::vector<int>& ready_after, double& compute_end, double& comm_end) {
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
  std::size_t next = 0;
  for (std::size_t i = 0; i < compute_ms.size(); ++i) {
    compute_end += compute_ms[i];
    for (; next < comm_ms.size() && ready_after[next] == static_cast<int>(i); ++next) {
      comm_end = std::max(comm_end, compute_end) + comm_ms[next];
    }
  }
}

double sum_ms(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

double step_bound(double end, double t_comp, double t_comm) { return std::max({end, t_comp, t_comm}); }

double pipeline_bound_ms(const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after) {
  double compute_end = 0.0, comm_end = 0.0;
  run_pipeline(compute_ms, comm_ms, ready_after, compute_end, comm_end);
  return std::max(compute_end, comm_end);
}

double schedule_bound_ms(double head_ms, const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after, double tail_ms, double t_comp, double t_comm) {
  return step_bound(head_ms + pipeline_bound_ms(compute_ms, comm_ms, ready_after) + tail_ms, t_comp, t_comm);
}

double equal_chunk_pipeline_ms(int chunks, double chunk_compute_ms, double chunk_comm_ms) {
  if (chunks < 1) throw std::invalid_argument("equal_chunk_pipeline_ms: chunks must be >= 1");
  return chunk_compute_ms + (chunks - 1) * std::max(chunk_compute_ms, chunk_comm_ms) + chunk_comm_ms;
}

Interval bootstrap_interval(const std::vector<std::vector<double>>& samples,
                            const std::function<double(const std::vector<double>& medians)>& metric, int resamples,
                            std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<double> values, medians(samples.size()), drawn;
  for (int r = 0; r < resamples; ++r) {
    for (std::size_t m = 0; m < samples.size(); ++m) {
      const auto& from = samples[m];
      if (from.empty()) throw std::invalid_argument("bootstrap_interval: a mode without samples");
      std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
      drawn.assign(from.size(), 0.0);
      for (auto& value : drawn) value = from[pick(random)];
      medians[m] = percentile(drawn, 50);
    }
    const double value = metric(medians);
    if (std::isfinite(value)) values.push_back(value);
  }
  if (values.empty()) return {NAN, NAN};
  return {percentile(values, 2.5), percentile(values, 97.5)};
}

double median_ci_rel(const std::vector<double>& samples) {
  if (samples.size() < 2) return NAN;
  const Interval median = bootstrap_interval({samples}, [](const std::vector<double>& m) { return m[0]; });
  return (median.hi - median.lo) / 2.0 / percentile(samples, 50);
}

double no_effect_value(const std::string& metric) {
  if (metric == "speedup") return 1.0;
  if (metric == "overlap_efficiency" || metric == "overlap_pct") return 0.0;
  return NAN;
}

bool resolved(const std::string& metric, double lo, double hi) {
  const double none = no_effect_value(metric);
  return std::isnan(none) || !(lo <= none && none <= hi);
}

bool in_meaningful_range(const std::string& metric, double value) {
  if (metric == "overlap_efficiency") return value >= 0.0 && value <= 1.0;
  return true;
}

}  // namespace ob
