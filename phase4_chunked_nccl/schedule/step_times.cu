#include "phase4_chunked_nccl/schedule/step_times.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace phase4 {

StepTimes resolve(const StepMarks& m, const std::function<double(int)>& at) {
  auto one = [&](int index) { return index < 0 ? std::nan("") : at(index); };
  auto all = [&](const std::vector<int>& indices) {
    std::vector<double> times;
    for (int index : indices) times.push_back(one(index));
    return times;
  };
  StepTimes t;
  t.start = one(m.start), t.forward_end = one(m.forward_end), t.update_start = one(m.update_start), t.end = one(m.end);
  t.step_begin = all(m.step_begin), t.step_end = all(m.step_end);
  t.bucket_begin = all(m.bucket_begin), t.bucket_end = all(m.bucket_end);
  t.layer_begin = all(m.layer_begin), t.layer_end = all(m.layer_end);
  for (const auto& [name, part] : m.parts) t.parts[name] = {all(part.begin), all(part.end)};
  return t;
}

StepTimes eager_times(const StepMarks& marks, const ob::EventLog& log, ob::SteadyClock::time_point origin,
                      double origin_ms) {
  StepTimes times = resolve(marks, [&](int index) { return log.ms_since_origin(index); });
  auto host_ms = [&](ob::SteadyClock::time_point t) { return ob::micros_since(origin, t) / 1000.0 - origin_ms; };
  for (std::size_t b = 0; b < marks.enqueue_begin.size(); ++b) {
    if (marks.bucket_begin[b] < 0) continue;  // a bucket this mode does not communicate
    times.enqueue_begin.push_back(host_ms(marks.enqueue_begin[b]));
    times.enqueue_end.push_back(host_ms(marks.enqueue_end[b]));
  }
  return times;
}

void collect(const std::vector<StepTimes>& marked, double origin_ms, int rank, int layers, const char* bucket_op,
             const std::vector<PartSpec>& own, ModeRun& run) {
  const ob::Mode mode = run.mode;
  const bool comm_only = mode == ob::Mode::kComm;
  const int nb = static_cast<int>(run.bucket_ms.size());
  const std::string compute_lane = std::string(ob::mode_name(mode)) + ":compute";
  const std::string comm_lane = std::string(ob::mode_name(mode)) + ":comm";
  const std::string host_lane = std::string(ob::mode_name(mode)) + ":host";
  for (std::size_t it = 0; it < marked.size(); ++it) {
    const StepTimes& t = marked[it];
    const int iter = static_cast<int>(it);
    auto event = [&](const std::string& lane, const char* name, int chunk, double from, double to) {
      run.events.push_back({rank, lane, name, iter, chunk, 1000.0 * (origin_ms + from), 1000.0 * (origin_ms + to)});
      return to - from;
    };
    if (!comm_only) {
      run.forward_ms.push_back(event(compute_lane, "forward", -1, t.start, t.forward_end));
      for (int l = 0; l < layers; ++l) run.layer_ms[l].push_back(t.layer_end[l] - t.layer_begin[l]);
      double backward = 0;
      for (int s = 0; s < layers; ++s) {
        const double ms = event(compute_lane, "backward", layers - s, t.step_begin[s], t.step_end[s]);
        run.step_ms[s].push_back(ms);
        backward += ms;
      }
      run.backward_total_ms.push_back(backward);
      run.update_ms.push_back(event(compute_lane, "update", -1, t.update_start, t.end));
    }
    if (mode != ob::Mode::kCompute) {
      for (int b = 0; b < nb; ++b) {
        run.bucket_ms[b].push_back(event(comm_lane, bucket_op, b, t.bucket_begin[b], t.bucket_end[b]));
      }
    }
    // The schedule's own parts, each in the modes that run its stream's work, where the step marked it.
    for (const auto& part : own) {
      if (part.comm ? mode == ob::Mode::kCompute : comm_only) continue;
      const auto& times = t.parts.at(part.name);
      for (int l = 0; l < layers; ++l) {
        if (std::isnan(times.begin[l])) continue;
        auto& samples = run.part_ms[part.name];
        if (samples.empty()) samples.assign(layers, {});
        samples[l].push_back(part.op.empty() ? times.end[l] - times.begin[l]
                                             : event(part.comm ? comm_lane : compute_lane, part.op.c_str(), l + 1,
                                                     times.begin[l], times.end[l]));
      }
    }
    if (mode != ob::Mode::kCompute) {
      double enqueue = 0;
      for (std::size_t b = 0; b < t.enqueue_begin.size(); ++b) {
        enqueue += event(host_lane, "enqueue", static_cast<int>(b), t.enqueue_begin[b], t.enqueue_end[b]);
      }
      if (!t.enqueue_begin.empty()) {
        run.enqueue_ms.push_back(enqueue);
        // From the first call's start to the last one's end: buckets need not be enqueued in the plan's order (the
        // carry schedule enqueues its carried ones, last first, before the others).
        run.enqueue_span_ms.push_back(*std::max_element(t.enqueue_end.begin(), t.enqueue_end.end()) -
                                      *std::min_element(t.enqueue_begin.begin(), t.enqueue_begin.end()));
      }
    }
  }
}

}  // namespace phase4
