// trace_stats.py, natively: steps_of (the markers' rule, only_replayed), alone_medians, wrapper_signatures, and per
// step the covers, the slowdown against lone instances, host_comm and blocking. Every sum runs in Python's order from
// zero and every min and max keeps Python's choice, so the doubles are the ones Python computes (a test compares them
// on every shipped trace).
#include "trace_reader/step_figures.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace ob::trace {
namespace {

constexpr double kBlockingUs = 20.0;  // trace_stats.BLOCKING_US

using Span = std::pair<double, double>;

// trace_model.Cover: the union of intervals, sorted, with its ends for bisection.
struct Cover {
  std::vector<Span> spans;
  std::vector<double> ends;
  explicit Cover(std::vector<Span> intervals) {
    std::sort(intervals.begin(), intervals.end());
    for (const auto& [a, b] : intervals) {
      if (!spans.empty() && a <= spans.back().second)
        spans.back().second = std::max(spans.back().second, b);
      else
        spans.emplace_back(a, b);
    }
    ends.reserve(spans.size());
    for (const auto& s : spans) ends.push_back(s.second);
  }
  size_t after(double t) const {
    return static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), t) - ends.begin());
  }
  bool inside(double t) const {  // trace_stats.inside
    size_t i = after(t);
    return i < spans.size() && spans[i].first <= t;
  }
  double overlap(double start, double end) const {  // trace_model.overlap_with
    double total = 0;
    for (size_t i = after(start); i < spans.size(); ++i) {
      auto [a, b] = spans[i];
      if (a >= end) break;
      total += std::min(b, end) - std::max(a, start);
    }
    return total;
  }
};

double length(const std::vector<Span>& spans) {
  double total = 0;
  for (const auto& [a, b] : spans) total += b - a;
  return total;
}

double minus(const std::vector<Span>& spans, const Cover& cover) {  // trace_model.minus
  double covered = 0;
  for (const auto& [a, b] : spans) covered += cover.overlap(a, b);
  return length(spans) - covered;
}

uint64_t key_of(const Columns& c, size_t k) { return uint64_t{c.k_name[k]} << 32 | c.k_shape[k]; }

double median(std::vector<double> values) {  // numpy's: the middle, or the mean of the two middle values
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

struct Trace {
  const Columns& c;
  const std::vector<uint8_t>& comm;
  const std::vector<double>& host;  // NaN: no launching call
  std::unordered_set<int64_t> graph;
  double launched(size_t k, double otherwise) const { return std::isnan(host[k]) ? otherwise : host[k]; }
};

// steps_of by the markers: each step's kernels (those whose launching call lies in its host range), in start order.
std::vector<std::pair<int64_t, std::vector<uint32_t>>> marked_steps(const Trace& t) {
  const Columns& c = t.c;
  std::vector<uint32_t> by_start(c.k_start.size());
  std::iota(by_start.begin(), by_start.end(), 0u);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](uint32_t a, uint32_t b) { return c.k_start[a] < c.k_start[b]; });
  std::vector<std::pair<double, uint32_t>> launched(by_start.size());
  for (uint32_t i = 0; i < by_start.size(); ++i) launched[i] = {t.launched(by_start[i], -1.0), i};
  std::sort(launched.begin(), launched.end());
  std::vector<double> hosts(launched.size());
  for (size_t i = 0; i < launched.size(); ++i) hosts[i] = launched[i].first;
  std::vector<size_t> order(c.step_start.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.step_start[a] < c.step_start[b]; });
  std::vector<std::pair<int64_t, std::vector<uint32_t>>> found;
  for (size_t s : order) {
    size_t lo = std::lower_bound(hosts.begin(), hosts.end(), c.step_start[s]) - hosts.begin();
    size_t hi = std::lower_bound(hosts.begin(), hosts.end(), c.step_end[s]) - hosts.begin();
    if (lo >= hi) continue;
    std::vector<uint32_t> mine;
    mine.reserve(hi - lo);
    for (size_t j = lo; j < hi; ++j) mine.push_back(by_start[launched[j].second]);
    std::stable_sort(mine.begin(), mine.end(), [&](uint32_t a, uint32_t b) { return c.k_start[a] < c.k_start[b]; });
    found.emplace_back(c.step_number[s], std::move(mine));
  }
  return found;
}

size_t graph_launched(const Trace& t, const std::vector<uint32_t>& kernels) {
  size_t n = 0;
  for (uint32_t k : kernels) n += t.graph.count(t.c.k_corr[k]);
  return n;
}

// Microseconds of the exposed communication a compute kernel queued behind it waited for (trace_stats.blocking).
double blocking(const Trace& t, const Cover& comm, const std::vector<uint32_t>& kernels,
                const std::vector<uint8_t>& mine, const Cover& cover) {
  const Columns& c = t.c;
  std::vector<uint32_t> compute;
  std::vector<double> starts;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (!t.comm[kernels[i]] && !mine[i]) {
      compute.push_back(kernels[i]);
      starts.push_back(c.k_start[kernels[i]]);
    }
  double total = 0;
  std::vector<Span> pieces;
  for (const auto& [a, b] : comm.spans) {
    pieces.clear();
    double at = a;
    for (size_t i = cover.after(a); i < cover.spans.size(); ++i) {
      auto [x, y] = cover.spans[i];
      if (x >= b) break;
      if (x > at) pieces.emplace_back(at, x);
      at = std::max(at, y);
    }
    if (at < b) pieces.emplace_back(at, b);
    for (const auto& [x, y] : pieces) {
      size_t i = std::lower_bound(starts.begin(), starts.end(), y) - starts.begin();
      if (i < compute.size() && c.k_start[compute[i]] - y <= kBlockingUs && !std::isnan(t.host[compute[i]]) &&
          t.host[compute[i]] < y)
        total += y - x;
    }
  }
  return total;
}

double host_comm(const Cover& calls, double start, double end, const Cover& busy) {
  std::vector<Span> clipped;
  for (size_t i = calls.after(start); i < calls.spans.size(); ++i) {
    auto [a, b] = calls.spans[i];
    if (a >= end) break;
    clipped.emplace_back(std::max(a, start), std::min(b, end));
  }
  return minus(clipped, busy);
}

// What every step's figures read of the whole trace: the covers of its collectives, of every kernel and of the
// wrapper's calls, each compute kernel's median alone (alone_medians), the wrapper's signatures and the markers.
struct Context {
  Cover comm_all, busy, calls;
  std::unordered_map<uint64_t, double> medians;
  std::unordered_set<uint64_t> signatures;
  std::unordered_map<int64_t, double> marks;
};

Context whole_trace(const Trace& t) {
  const Columns& c = t.c;
  size_t n = c.k_start.size();
  std::vector<Span> comm_spans, all_spans, wrapper;
  for (size_t k = 0; k < n; ++k) {
    all_spans.emplace_back(c.k_start[k], c.k_end[k]);
    if (t.comm[k]) comm_spans.emplace_back(c.k_start[k], c.k_end[k]);
  }
  for (size_t i = 0; i < c.wrap_start.size(); ++i) wrapper.emplace_back(c.wrap_start[i], c.wrap_end[i]);
  Context x{Cover(std::move(comm_spans)), Cover(std::move(all_spans)), Cover(std::move(wrapper)), {}, {}, {}};
  std::unordered_map<uint64_t, std::vector<double>> alone;
  for (size_t k = 0; k < n; ++k)
    if (!t.comm[k] && x.comm_all.overlap(c.k_start[k], c.k_end[k]) == 0)
      alone[key_of(c, k)].push_back(c.k_end[k] - c.k_start[k]);
  for (auto& [key, values] : alone) x.medians[key] = median(std::move(values));
  // wrapper_signatures: kernels of the eager steps the wrapper's calls launched and no other call did
  std::unordered_set<uint64_t> others;
  for (size_t k = 0; k < n; ++k)
    if (!t.comm[k] && !t.graph.count(c.k_corr[k]))
      (x.calls.inside(t.launched(k, -1.0)) ? x.signatures : others).insert(key_of(c, k));
  for (uint64_t key : others) x.signatures.erase(key);
  for (size_t i = 0; i < c.step_number.size(); ++i) x.marks[c.step_number[i]] = c.step_start[i];
  return x;
}

// The slowdown of a step's compute kernels (not the wrapper's) that ran beside a collective, against the median of
// the same kernel's lone instances (trace_stats.baselines): (slowdown us, their time alone us).
std::pair<double, double> slowdown(const Trace& t, const Context& x, const std::vector<uint32_t>& kernels,
                                   const std::vector<uint8_t>& mine) {
  const Columns& c = t.c;
  double slowdown = 0, slowed = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    uint32_t k = kernels[i];
    if (t.comm[k] || mine[i] || !(x.comm_all.overlap(c.k_start[k], c.k_end[k]) > 0)) continue;
    auto base = x.medians.find(key_of(c, k));
    if (base == x.medians.end()) continue;
    slowdown += (c.k_end[k] - c.k_start[k]) - base->second;
    slowed += base->second;
  }
  return {slowdown, slowed};
}

void keep_rows(const Trace& t, const std::vector<uint32_t>& kernels, const Cover& compute, StepFigures& f) {
  const Columns& c = t.c;
  for (uint32_t k : kernels) {
    f.row_kernel.push_back(k);
    if (!t.comm[k]) continue;
    f.bucket_name.push_back(c.strings.texts()[c.k_coll[k]].empty() ? c.k_name[k] : c.k_coll[k]);
    f.bucket_bytes.push_back(c.k_bytes[k]);
    f.bucket_start.push_back(c.k_start[k]);
    f.bucket_end.push_back(c.k_end[k]);
  }
  for (const auto& [a, b] : compute.spans) {
    f.cover_start.push_back(a);
    f.cover_end.push_back(b);
  }
  f.bucket_from.push_back(f.bucket_name.size());
  f.cover_from.push_back(f.cover_start.size());
  f.row_from.push_back(f.row_kernel.size());
}

// One step's figures (trace_stats.step_stats' loop body).
void one_step(const Trace& t, const Context& x, int64_t number, const std::vector<uint32_t>& kernels, StepFigures& f) {
  const Columns& c = t.c;
  std::vector<Span> comm_iv, compute_iv, mine_iv, others_iv;
  std::vector<uint8_t> mine(kernels.size(), 0);
  double start = c.k_start[kernels[0]], end = c.k_end[kernels[0]];
  for (size_t i = 0; i < kernels.size(); ++i) {
    uint32_t k = kernels[i];
    Span span{c.k_start[k], c.k_end[k]};
    start = std::min(start, span.first);
    end = std::max(end, span.second);
    if (t.comm[k]) {
      comm_iv.push_back(span);
      continue;
    }
    compute_iv.push_back(span);
    mine[i] = t.graph.count(c.k_corr[k]) ? x.signatures.count(key_of(c, k)) > 0 : x.calls.inside(t.launched(k, -1.0));
    (mine[i] ? mine_iv : others_iv).push_back(span);
  }
  Cover comm(std::move(comm_iv)), compute(std::move(compute_iv)), others(std::move(others_iv));
  auto [slow, slowed] = slowdown(t, x, kernels, mine);
  auto mark = x.marks.find(number);
  double from = mark == x.marks.end() ? start : std::min(start, mark->second);
  f.number.push_back(number);
  f.start.push_back(start);
  f.end.push_back(end);
  f.comm_ms.push_back(length(comm.spans) / 1e3);
  f.compute_ms.push_back(length(compute.spans) / 1e3);
  f.exposed_ms.push_back(minus(comm.spans, compute) / 1e3);
  f.slowdown_ms.push_back(slow / 1e3);
  f.slowed_ms.push_back(slowed / 1e3);
  f.host_ms.push_back(host_comm(x.calls, from, end, x.busy) / 1e3);
  f.wrapper_gpu_ms.push_back(minus(Cover(std::move(mine_iv)).spans, others) / 1e3);
  f.replayed.push_back(2 * graph_launched(t, kernels) > kernels.size());
  f.blocking_ms.push_back(blocking(t, comm, kernels, mine, compute) / 1e3);
  keep_rows(t, kernels, compute, f);
}

}  // namespace

KernelFlags kernel_flags(const Columns& c) {
  KernelFlags flags;
  auto& comm = flags.comm;
  auto& host = flags.host;
  std::unordered_map<int64_t, double> launches;
  launches.reserve(c.l_corr.size());
  for (size_t i = 0; i < c.l_corr.size(); ++i) launches[c.l_corr[i]] = c.l_ts[i];  // a later call replaces
  const auto& texts = c.strings.texts();
  std::vector<int8_t> nccl(texts.size(), -1);  // per name: "nccl" in name.lower() (ASCII: no other letter folds to it)
  size_t n = c.k_start.size();
  comm.assign(n, 0);
  host.assign(n, std::nan(""));
  for (size_t k = 0; k < n; ++k) {
    int8_t& named = nccl[c.k_name[k]];
    if (named < 0) {
      std::string lower = texts[c.k_name[k]];
      for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      named = lower.find("nccl") != std::string::npos;
    }
    comm[k] = !texts[c.k_coll[k]].empty() || named;
    auto found = launches.find(c.k_corr[k]);
    if (found != launches.end()) host[k] = found->second;
  }
  return flags;
}

StepFigures step_figures(const Columns& c, const KernelFlags& flags) {
  StepFigures f;
  if (c.step_start.empty() || c.l_corr.empty() || !c.co_start.empty() || c.k_start.empty()) return f;
  Trace t{c, flags.comm, flags.host, std::unordered_set<int64_t>(c.graph_corr.begin(), c.graph_corr.end())};
  auto steps = marked_steps(t);
  if (steps.empty()) return f;  // by repetition: Python's
  std::vector<std::pair<int64_t, std::vector<uint32_t>>> replayed;
  for (const auto& step : steps)
    if (2 * graph_launched(t, step.second) > step.second.size()) replayed.push_back(step);
  if (!replayed.empty()) steps.swap(replayed);
  Context context = whole_trace(t);
  f.bucket_from.push_back(0);
  f.cover_from.push_back(0);
  f.row_from.push_back(0);
  for (const auto& [number, kernels] : steps) one_step(t, context, number, kernels, f);
  f.computed = true;
  return f;
}

}  // namespace ob::trace
