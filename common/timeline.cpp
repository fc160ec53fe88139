#include "common/timeline.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "common/mpi_session.hpp"

namespace ob {

const std::vector<std::string> kTimelineColumns = {"rank", "lane", "name", "iter", "chunk", "start_us", "end_us"};

CsvTable timeline_csv(const std::vector<TimelineEvent>& events) {
  CsvTable table(kTimelineColumns);
  for (const auto& e : events) {
    table.add_row({std::to_string(e.rank), e.lane, e.name, std::to_string(e.iter), std::to_string(e.chunk),
                   format_number(e.start_us, 12), format_number(e.end_us, 12)});
  }
  return table;
}

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

nlohmann::json chrome_trace(const std::vector<TimelineEvent>& events, const std::vector<PowerPoint>& power) {
  using nlohmann::json;
  json trace_events = json::array();
  std::map<int, bool> ranks_named;
  auto name_rank = [&](int rank) {
    if (ranks_named[rank]) return;
    ranks_named[rank] = true;
    trace_events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                            {"args", {{"name", "rank " + std::to_string(rank)}}}});
  };
  // Events of one lane in start order; each goes on the lane's first track whose last event has ended (a track
  // of its own for work in flight at once, such as non-blocking requests: slices on one track must nest).
  std::map<std::pair<int, std::string>, std::vector<std::size_t>> by_lane;
  for (std::size_t i = 0; i < events.size(); ++i) by_lane[{events[i].rank, events[i].lane}].push_back(i);
  std::vector<int> tid_of(events.size(), 0);
  int next_tid = 0;
  for (auto& [key, indices] : by_lane) {
    name_rank(key.first);
    std::stable_sort(indices.begin(), indices.end(),
                     [&](std::size_t a, std::size_t b) { return events[a].start_us < events[b].start_us; });
    std::vector<std::pair<int, double>> tracks;  // tid, end of its last event
    for (const std::size_t i : indices) {
      auto track = std::find_if(tracks.begin(), tracks.end(),
                                [&](const auto& t) { return t.second <= events[i].start_us; });
      if (track == tracks.end()) {
        const int tid = next_tid++;
        const std::string name = tracks.empty() ? key.second : key.second + " #" + std::to_string(tracks.size() + 1);
        trace_events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", key.first}, {"tid", tid},
                                {"args", {{"name", name}}}});
        tracks.emplace_back(tid, 0.0);
        track = tracks.end() - 1;
      }
      track->second = events[i].end_us;
      tid_of[i] = track->first;
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    trace_events.push_back({{"name", e.name}, {"ph", "X"}, {"pid", e.rank}, {"tid", tid_of[i]},
                            {"ts", e.start_us}, {"dur", e.end_us - e.start_us},
                            {"args", {{"iter", e.iter}, {"chunk", e.chunk}}}});
  }
  // Flow arrows: each communication event ("<mode>:comm" lane) from the compute event of the same rank, mode and
  // iteration that ended last before it started (the work whose end made it ready).
  int flow = 0;
  for (std::size_t c = 0; c < events.size(); ++c) {
    const auto& comm = events[c];
    if (!ends_with(comm.lane, ":comm")) continue;
    const std::string compute_lane = comm.lane.substr(0, comm.lane.size() - 4) + "compute";
    std::size_t from = events.size();
    for (std::size_t k = 0; k < events.size(); ++k) {
      const auto& e = events[k];
      if (e.rank != comm.rank || e.lane != compute_lane || e.iter != comm.iter || e.end_us > comm.start_us) continue;
      if (from == events.size() || e.end_us > events[from].end_us) from = k;
    }
    if (from == events.size()) continue;
    const auto& ready = events[from];
    const double inside = ready.end_us - std::min(0.001, (ready.end_us - ready.start_us) / 2);  // within the slice
    trace_events.push_back({{"name", "ready"}, {"cat", "ready"}, {"ph", "s"}, {"id", flow}, {"pid", ready.rank},
                            {"tid", tid_of[from]}, {"ts", inside}});
    trace_events.push_back({{"name", "ready"}, {"cat", "ready"}, {"ph", "f"}, {"bp", "e"}, {"id", flow},
                            {"pid", comm.rank}, {"tid", tid_of[c]}, {"ts", comm.start_us}});
    ++flow;
  }
  // Power as a counter track per rank, one series per GPU.
  for (const auto& point : power) {
    name_rank(point.rank);
    trace_events.push_back({{"name", "power (W)"}, {"ph", "C"}, {"pid", point.rank}, {"ts", point.t_us},
                            {"args", {{"gpu " + std::to_string(point.gpu), point.watts}}}});
  }
  return json{{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}};
}

std::vector<TimelineEvent> gather_timeline(const std::vector<TimelineEvent>& local, MPI_Comm comm, int root) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& e : local) {
    mine.push_back({e.rank, e.lane, e.name, e.iter, e.chunk, e.start_us, e.end_us});
  }
  std::vector<TimelineEvent> merged;
  for (const auto& text : gather_strings(mine.dump(), comm, root)) {
    for (const auto& item : nlohmann::json::parse(text)) {
      merged.push_back({item[0].get<int>(), item[1].get<std::string>(), item[2].get<std::string>(),
                        item[3].get<int>(), item[4].get<int>(), item[5].get<double>(), item[6].get<double>()});
    }
  }
  return merged;
}

bool overlaps_in_time(const TimelineEvent& a, const TimelineEvent& b) {
  return a.start_us < b.end_us && b.start_us < a.end_us;
}

}  // namespace ob
