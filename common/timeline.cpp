#include "common/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "common/csv_schema.hpp"
#include "common/mpi_session.hpp"
#include "common/options.hpp"

namespace ob {

const std::vector<std::string> kTimelineColumns = csv_schema_columns("timeline", "columns");

CsvTable timeline_csv(const std::vector<TimelineEvent>& events) {
  CsvTable table(kTimelineColumns);
  for (const auto& e : events) {
    table.add_row({std::to_string(e.rank), e.lane, e.name, std::to_string(e.iter), std::to_string(e.chunk),
                   format_number(e.start_us, 12), format_number(e.end_us, 12), e.point});
  }
  return table;
}

namespace {

// Reads `table`'s columns by name: the index of `name` (-1 when `optional` and absent), and row values as numbers.
class ColumnReader {
 public:
  explicit ColumnReader(const CsvTable& table) : table_(table) {}
  int index(const std::string& name, bool optional = false) const {
    const auto& header = table_.header();
    const auto found = std::find(header.begin(), header.end(), name);
    if (found == header.end()) {
      if (optional) return -1;
      throw std::invalid_argument("no column '" + name + "'");
    }
    return static_cast<int>(found - header.begin());
  }
  double number(std::size_t row, int column) const {
    const auto value = parse_number(table_.rows()[row][column]);
    if (!value) {
      throw std::invalid_argument("row " + std::to_string(row + 2) + ", column '" + table_.header()[column] + "': '" +
                                  table_.rows()[row][column] + "' is not a number");
    }
    return *value;
  }
  // A whole number of the column in [lo, hi] (rank, iteration, chunk: ints in the trace).
  int whole(std::size_t row, int column, double lo, double hi) const {
    const double value = number(row, column);
    if (!(value >= lo && value <= hi && value == std::floor(value))) {
      throw std::invalid_argument("row " + std::to_string(row + 2) + ", column '" + table_.header()[column] + "': '" +
                                  table_.rows()[row][column] + "' is not a whole number from " +
                                  std::to_string(static_cast<long long>(lo)) + " to " +
                                  std::to_string(static_cast<long long>(hi)));
    }
    return static_cast<int>(value);
  }

 private:
  const CsvTable& table_;
};

}  // namespace

std::vector<TimelineEvent> timeline_from_csv(const CsvTable& table) {
  const ColumnReader read(table);
  const int rank = read.index("rank"), lane = read.index("lane"), name = read.index("name"), iter = read.index("iter"),
            chunk = read.index("chunk"), start = read.index("start_us"), end = read.index("end_us"),
            point = read.index("point", true);
  std::vector<TimelineEvent> events;
  for (std::size_t r = 0; r < table.rows().size(); ++r) {
    const auto& row = table.rows()[r];
    const double begin_us = read.number(r, start), end_us = read.number(r, end);
    if (end_us < begin_us) {
      throw std::invalid_argument("row " + std::to_string(r + 2) + ": end_us " + row[end] + " is before start_us " +
                                  row[start]);
    }
    constexpr double kMostIndex = 1 << 30;  // ranks, iterations and chunks as the binaries write them
    events.push_back({read.whole(r, rank, 0, kMostIndex), row[lane], row[name],
                      read.whole(r, iter, -kMostIndex, kMostIndex), read.whole(r, chunk, -1, kMostIndex), begin_us,
                      end_us, point < 0 ? std::string() : row[point]});
  }
  return events;
}

std::vector<PowerPoint> power_from_csv(const CsvTable& table) {
  const ColumnReader read(table);
  const int rank = read.index("rank"), gpu = read.index("gpu"), t = read.index("t_us"), watts = read.index("power_w");
  std::vector<PowerPoint> samples;
  for (std::size_t r = 0; r < table.rows().size(); ++r) {
    samples.push_back({static_cast<int>(read.number(r, rank)), static_cast<int>(read.number(r, gpu)), read.number(r, t),
                       read.number(r, watts)});
  }
  return samples;
}

void label_point(std::vector<TimelineEvent>& events, const std::string& label) {
  for (auto& e : events) e.point = label;
}

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Flow arrows: each communication event ("<mode>:comm" lane) from the compute event of the same point, rank, mode
// and iteration that ended last before it started (the work whose end made it ready). Compute events are indexed
// by (point, rank, lane, iteration) in order of their ends, so a sweep of many events stays linear-logarithmic.
void add_flow_arrows(const std::vector<TimelineEvent>& events, const std::vector<int>& pid_of_event,
                     const std::vector<int>& tid_of, nlohmann::json& trace_events) {
  using IterKey = std::tuple<std::string, int, std::string, int>;
  std::map<IterKey, std::vector<std::size_t>> ends;
  for (std::size_t k = 0; k < events.size(); ++k)
    ends[{events[k].point, events[k].rank, events[k].lane, events[k].iter}].push_back(k);
  for (auto& [key, indices] : ends) {
    std::stable_sort(indices.begin(), indices.end(),
                     [&](std::size_t a, std::size_t b) { return events[a].end_us < events[b].end_us; });
  }
  int flow = 0;
  for (std::size_t c = 0; c < events.size(); ++c) {
    const auto& comm = events[c];
    if (!ends_with(comm.lane, ":comm")) continue;
    const std::string compute_lane = comm.lane.substr(0, comm.lane.size() - 4) + "compute";
    const auto found = ends.find({comm.point, comm.rank, compute_lane, comm.iter});
    if (found == ends.end()) continue;
    const auto& sorted = found->second;
    const auto after = std::upper_bound(sorted.begin(), sorted.end(), comm.start_us,
                                        [&](double t, std::size_t k) { return t < events[k].end_us; });
    if (after == sorted.begin()) continue;
    const std::size_t from = *std::prev(after);
    const auto& ready = events[from];
    const double inside = ready.end_us - std::min(0.001, (ready.end_us - ready.start_us) / 2);  // within the slice
    trace_events.push_back({{"name", "ready"},
                            {"cat", "ready"},
                            {"ph", "s"},
                            {"id", flow},
                            {"pid", pid_of_event[from]},
                            {"tid", tid_of[from]},
                            {"ts", inside}});
    trace_events.push_back({{"name", "ready"},
                            {"cat", "ready"},
                            {"ph", "f"},
                            {"bp", "e"},
                            {"id", flow},
                            {"pid", pid_of_event[c]},
                            {"tid", tid_of[c]},
                            {"ts", comm.start_us}});
    ++flow;
  }
}

}  // namespace

nlohmann::json chrome_trace(const std::vector<TimelineEvent>& events, const std::vector<PowerPoint>& power) {
  using nlohmann::json;
  json trace_events = json::array();
  // One process per (sweep point, rank), numbered in order of first appearance; outside a sweep pid = rank.
  const bool sweep = std::any_of(events.begin(), events.end(), [](const auto& e) { return !e.point.empty(); });
  std::map<std::pair<std::string, int>, int> pids;
  auto pid_of = [&](const std::string& point, int rank) {
    const auto found = pids.find({point, rank});
    if (found != pids.end()) return found->second;
    const int pid = sweep ? static_cast<int>(pids.size()) : rank;
    pids[{point, rank}] = pid;
    const std::string name = point.empty() ? "rank " + std::to_string(rank) : point + " · rank " + std::to_string(rank);
    trace_events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
    trace_events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    return pid;
  };
  // Events of one lane in start order; each goes on the lane's first track whose last event has ended (a track
  // of its own for work in flight at once, such as non-blocking requests: slices on one track must nest).
  using LaneKey = std::tuple<std::string, int, std::string>;  // point, rank, lane
  std::map<LaneKey, std::vector<std::size_t>> by_lane;
  for (std::size_t i = 0; i < events.size(); ++i)
    by_lane[{events[i].point, events[i].rank, events[i].lane}].push_back(i);
  std::vector<int> tid_of(events.size(), 0), pid_of_event(events.size(), 0);
  int next_tid = 0;
  for (auto& [key, indices] : by_lane) {
    const int pid = pid_of(std::get<0>(key), std::get<1>(key));
    std::stable_sort(indices.begin(), indices.end(),
                     [&](std::size_t a, std::size_t b) { return events[a].start_us < events[b].start_us; });
    std::vector<std::pair<int, double>> tracks;  // tid, end of its last event
    for (const std::size_t i : indices) {
      auto track =
          std::find_if(tracks.begin(), tracks.end(), [&](const auto& t) { return t.second <= events[i].start_us; });
      if (track == tracks.end()) {
        const int tid = next_tid++;
        const std::string& lane = std::get<2>(key);
        const std::string name = tracks.empty() ? lane : lane + " #" + std::to_string(tracks.size() + 1);
        trace_events.push_back(
            {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
        tracks.emplace_back(tid, 0.0);
        track = tracks.end() - 1;
      }
      track->second = events[i].end_us;
      tid_of[i] = track->first;
      pid_of_event[i] = pid;
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    trace_events.push_back({{"name", e.name},
                            {"ph", "X"},
                            {"pid", pid_of_event[i]},
                            {"tid", tid_of[i]},
                            {"ts", e.start_us},
                            {"dur", e.end_us - e.start_us},
                            {"args", {{"iter", e.iter}, {"chunk", e.chunk}}}});
  }
  add_flow_arrows(events, pid_of_event, tid_of, trace_events);
  // Power as a counter track per rank, one series per GPU (on the rank's process outside a sweep, else on a
  // process of its own per rank: samples run across every point).
  for (const auto& point : power) {
    const int pid = pid_of(sweep ? "power" : "", point.rank);
    trace_events.push_back({{"name", "power (W)"},
                            {"ph", "C"},
                            {"pid", pid},
                            {"ts", point.t_us},
                            {"args", {{"gpu " + std::to_string(point.gpu), point.watts}}}});
  }
  return json{{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}};
}

std::string trace_text(const std::vector<TimelineEvent>& events, const std::vector<PowerPoint>& power) {
  return chrome_trace(events, power).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<TimelineEvent> gather_timeline(const std::vector<TimelineEvent>& local, MPI_Comm comm, int root) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& e : local) {
    mine.push_back({e.rank, e.lane, e.name, e.iter, e.chunk, e.start_us, e.end_us, e.point});
  }
  std::vector<TimelineEvent> merged;
  for (const auto& text : gather_strings(mine.dump(), comm, root)) {
    for (const auto& item : nlohmann::json::parse(text)) {
      merged.push_back({item[0].get<int>(), item[1].get<std::string>(), item[2].get<std::string>(), item[3].get<int>(),
                        item[4].get<int>(), item[5].get<double>(), item[6].get<double>(), item[7].get<std::string>()});
    }
  }
  return merged;
}

bool overlaps_in_time(const TimelineEvent& a, const TimelineEvent& b) {
  return a.start_us < b.end_us && b.start_us < a.end_us;
}

}  // namespace ob
