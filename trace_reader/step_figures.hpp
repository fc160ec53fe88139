// A rank's per-step figures computed over its columns (issue 82): trace_stats.step_stats' numbers, the same doubles
// in the same order of operations, so that Python reads a few numbers a step instead of every kernel. Also what the
// analysis draws from the steps without its kernels: each step's collectives (its buckets), the union of its compute
// kernels (peer_waits), and the timeline's rows in step order. Computed where the steps are the profiler's markers and
// the trace holds no compute-only range; elsewhere (steps by repetition, compute-only steps) `computed` stays false
// and Python measures the kernels itself.
#pragma once

#include <cstdint>
#include <vector>

#include "trace_reader/columns.hpp"

namespace ob::trace {

struct StepFigures {
  bool computed = false;
  // per step, in trace_stats.steps_of's order
  std::vector<int64_t> number;
  std::vector<double> start, end, comm_ms, compute_ms, exposed_ms, slowdown_ms, slowed_ms, host_ms, wrapper_gpu_ms,
      blocking_ms;
  std::vector<uint8_t> replayed;
  // the step's collectives in start order (flat; bucket_from[i] to bucket_from[i + 1] are step i's)
  std::vector<uint64_t> bucket_from;
  std::vector<uint32_t> bucket_name;  // the collective's name, else the kernel's (a string id)
  std::vector<double> bucket_bytes, bucket_start, bucket_end;
  // the union of the step's compute kernels (flat, cover_from as bucket_from)
  std::vector<uint64_t> cover_from;
  std::vector<double> cover_start, cover_end;
  // the timeline's rows: every kernel of every step, in start order (flat, row_from as bucket_from)
  std::vector<uint64_t> row_from;
  std::vector<uint32_t> row_kernel;
};

// Per kernel: whether it is communication (Kernel.comm) and its launching call's host time (NaN where none).
struct KernelFlags {
  std::vector<uint8_t> comm;
  std::vector<double> host;
};
KernelFlags kernel_flags(const Columns& c);
// The figures of `c` (after wrapping_ends), or computed = false where Python must measure the kernels.
StepFigures step_figures(const Columns& c, const KernelFlags& flags);

}  // namespace ob::trace
