// trace_read.py's _wrapping_ends, natively: the host time of DDP's forward outside the user's operators is the
// wrapper's. Numbers as numpy's there: operators of a thread sorted stably by start, searchsorted left and right.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "trace_reader/kineto_events.hpp"

namespace ob::trace {

void wrapping_ends(Columns& c) {
  std::unordered_map<uint32_t, std::vector<size_t>> threads;  // thread -> its operators, by start (stable)
  for (size_t i = 0; i < c.op_tid.size(); ++i) threads[c.op_tid[i]].push_back(i);
  for (auto& [tid, order] : threads)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.op_start[a] < c.op_start[b]; });
  for (size_t w = 0; w < c.wrapping_start.size(); ++w) {
    double start = c.wrapping_start[w], end = c.wrapping_end[w];
    double first = 0, last = 0;
    bool inner = false;
    auto found = threads.find(c.wrapping_tid[w]);
    if (found != threads.end()) {
      const auto& order = found->second;
      auto lo =
          std::lower_bound(order.begin(), order.end(), start, [&](size_t i, double t) { return c.op_start[i] < t; });
      auto hi =
          std::upper_bound(order.begin(), order.end(), end, [&](double t, size_t i) { return t < c.op_start[i]; });
      for (auto it = lo; it < hi; ++it) {
        if (!(c.op_end[*it] <= end)) continue;
        first = inner ? std::min(first, c.op_start[*it]) : c.op_start[*it];
        last = inner ? std::max(last, c.op_end[*it]) : c.op_end[*it];
        inner = true;
      }
    }
    if (!inner) {
      c.wrap_start.push_back(start);
      c.wrap_end.push_back(end);
    } else {
      c.wrap_start.insert(c.wrap_start.end(), {start, last});
      c.wrap_end.insert(c.wrap_end.end(), {first, end});
    }
  }
  c.wrapping_start.clear();
  c.wrapping_end.clear();
  c.wrapping_tid.clear();
  c.op_tid.clear();
  c.op_start.clear();
  c.op_end.clear();
}

}  // namespace ob::trace
