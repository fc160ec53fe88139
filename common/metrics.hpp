// Every derived metric the suite reports, defined once (METRICS.md documents each with the same names).
// Times are in milliseconds; the caller passes per-iteration medians of the slowest rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ob {

// A 95 % confidence interval.
struct Interval {
  double lo, hi;
};

// Percentile bootstrap over iterations: each mode's samples resampled with replacement (modes ran apart: independent),
// `metric` applied to the resamples' medians, `resamples` times with a fixed seed; the 2.5th and 97.5th percentiles.
Interval bootstrap_interval(const std::vector<std::vector<double>>& samples,
                            const std::function<double(const std::vector<double>& medians)>& metric,
                            int resamples = 1000, std::uint64_t seed = 1234);

// How wide a row's spread may be before it is called unstable: the relative half-width of the 95 % bootstrap interval
// of its median over the iterations (METRICS.md, "Steady state").
inline constexpr double kUnstableCiRel = 0.05;

// (hi - lo) / 2 / median of the 95 % bootstrap interval of the median of `samples`; NaN for fewer than 2 samples.
double median_ci_rel(const std::vector<double>& samples);

// The value of a metric that means "no effect" (speedup 1, overlap_efficiency and overlap_pct 0), NaN for others:
// a metric whose interval holds it is not resolved. And whether `value` lies in the metric's meaningful range
// (overlap_efficiency in [0, 1]; every other metric: true).
double no_effect_value(const std::string& metric);
// The one rule of "not resolved" (the console's n.r., the `<metric>_resolved` column verdict.py reads): resolved
// unless the closed interval [lo, hi] holds the metric's no-effect value. True for a metric without one.
bool resolved(const std::string& metric, double lo, double hi);
bool in_meaningful_range(const std::string& metric, double value);

// T_ideal = max(T_comp, T_comm): perfect overlap with no contention.
double ideal_ms(double t_comp, double t_comm);

// (T_comp + T_comm - T_ovl) / min(T_comp, T_comm): 1 when the shorter of the two is fully hidden. NaN when
// min(T_comp, T_comm) is 0 (nothing to hide).
double overlap_efficiency(double t_comp, double t_comm, double t_ovl);

// T_seq / T_ovl.
double speedup(double t_seq, double t_ovl);

// OSU-style overlap %: 100 * (1 - (T_ovl - T_comp) / T_comm), clamped to [0, 100]; the share of communication
// time hidden behind computation ("comm hidden %"). NaN when T_comm is 0.
double overlap_pct(double t_ovl, double t_comp, double t_comm);

// (sum of compute time while overlapped - sum isolated) / sum isolated. NaN when the isolated sum is 0.
double compute_slowdown(double overlapped_total, double isolated_total);

// algbw = bytes / time (GB/s, 1 GB = 1e9 B); busbw for all-reduce = algbw * 2 (n - 1) / n (nccl-tests).
double algbw_GBps(double bytes, double time_ms);
double allreduce_busbw_GBps(double algbw, int ranks);

// Schedule bound: completion time of a pipeline with no contention. Compute tasks run one after another;
// communication task k may start once compute task ready_after[k] has finished and task k-1 has finished
// (communication is serialised in launch order, as on one stream or one thread). Returns
// max(end of last compute, end of last communication). ready_after must be non-decreasing and index `compute`.
double pipeline_bound_ms(const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after);

// The schedule bound of a training step: `head_ms` (forward) first, then the pipeline of `compute_ms` (backward
// pieces) and `comm_ms`, then `tail_ms` (the update, which waits for the last communication); never below T_comp
// (the compute-only step, with the iteration's time outside its tasks: launch gaps, loop, barrier exit) nor T_comm
// (the communication alone takes that long), so T_ideal <= bound. That outside time is not added to the pipeline's
// end: where it lies in the step is not measured, and an overlapped step hides the part the compute stream spends
// waiting for its launches behind its communication (4 x H100, 1024,32,256: the host enqueuing for 41 % of a step,
// a bound adding it after the pipeline lay 4 % above that step).
double schedule_bound_ms(double head_ms, const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                         const std::vector<int>& ready_after, double tail_ms, double t_comp, double t_comm);

// The building blocks of a schedule's bound (a phase's own schedules compose them: phase 4's schedule/ folder):
// run_pipeline advances a compute clock at `compute_end` and a communication clock at `comm_end` through the
// pipeline of pipeline_bound_ms() (both to their tasks' ends); step_bound turns a critical path `end` of tasks into
// a step's bound: never below t_comp nor t_comm (schedule_bound_ms).
void run_pipeline(const std::vector<double>& compute_ms, const std::vector<double>& comm_ms,
                  const std::vector<int>& ready_after, double& compute_end, double& comm_end);
double step_bound(double end, double t_comp, double t_comm);
double sum_ms(const std::vector<double>& values);

// The same for `chunks` equal chunks: c + (chunks - 1) * max(c, m) + m.
double equal_chunk_pipeline_ms(int chunks, double chunk_compute_ms, double chunk_comm_ms);

}  // namespace ob
