#include "common/timeline.hpp"

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

nlohmann::json chrome_trace(const std::vector<TimelineEvent>& events) {
  using nlohmann::json;
  json trace_events = json::array();
  std::map<std::pair<int, std::string>, int> lane_ids;
  std::map<int, bool> ranks_named;
  for (const auto& e : events) {
    if (!ranks_named[e.rank]) {
      ranks_named[e.rank] = true;
      trace_events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", e.rank},
                              {"args", {{"name", "rank " + std::to_string(e.rank)}}}});
    }
    auto key = std::make_pair(e.rank, e.lane);
    auto found = lane_ids.find(key);
    if (found == lane_ids.end()) {
      const int id = static_cast<int>(lane_ids.size());
      found = lane_ids.emplace(key, id).first;
      trace_events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", e.rank}, {"tid", id},
                              {"args", {{"name", e.lane}}}});
    }
    trace_events.push_back({{"name", e.name}, {"ph", "X"}, {"pid", e.rank}, {"tid", found->second},
                            {"ts", e.start_us}, {"dur", e.end_us - e.start_us},
                            {"args", {{"iter", e.iter}, {"chunk", e.chunk}}}});
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
