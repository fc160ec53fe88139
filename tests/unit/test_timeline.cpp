#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/timeline.hpp"

namespace {
std::vector<ob::TimelineEvent> sample_events() {
  return {{0, "compute", "compute", 0, 0, 0.0, 10.0},
          {0, "comm", "allreduce", 0, 0, 10.0, 15.0},
          {1, "compute", "compute", 0, 1, 2.5, 12.0}};
}
}  // namespace

TEST(Timeline, CsvColumnsAndRows) {
  const auto table = ob::timeline_csv(sample_events());
  EXPECT_EQ(table.header(),
            (std::vector<std::string>{"rank", "lane", "name", "iter", "chunk", "start_us", "end_us", "point"}));
  ASSERT_EQ(table.rows().size(), 3u);
  EXPECT_EQ(table.rows()[1], (std::vector<std::string>{"0", "comm", "allreduce", "0", "0", "10", "15", ""}));
  EXPECT_EQ(table.rows()[2][5], "2.5");
}

TEST(Timeline, ChromeTraceIsValidJsonWithCompleteEvents) {
  const std::string text = ob::chrome_trace(sample_events()).dump();
  const auto trace = nlohmann::json::parse(text);  // valid JSON round trip
  ASSERT_TRUE(trace.contains("traceEvents"));
  int complete = 0, thread_names = 0, process_names = 0;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e["ts"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["tid"].is_number_integer());
    } else if (e["name"] == "thread_name") {
      ++thread_names;
    } else if (e["name"] == "process_name") {
      ++process_names;
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(thread_names, 3);  // rank 0: compute, comm; rank 1: compute
  EXPECT_EQ(process_names, 2);
  nlohmann::json comm;
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "allreduce") comm = e;
  }
  EXPECT_EQ(comm["name"], "allreduce");
  EXPECT_DOUBLE_EQ(comm["dur"].get<double>(), 5.0);
  EXPECT_EQ(comm["args"]["chunk"], 0);
}

TEST(Timeline, EmptyTraceIsStillValid) {
  const auto trace = nlohmann::json::parse(ob::chrome_trace({}).dump());
  EXPECT_TRUE(trace["traceEvents"].empty());
}

TEST(Timeline, OverlapInTime) {
  const auto e = sample_events();
  EXPECT_TRUE(ob::overlaps_in_time(e[0], e[2]));
  EXPECT_FALSE(ob::overlaps_in_time(e[0], e[1]));  // touching is not overlapping
}

namespace {
// Every track's complete events nest (disjoint, or one inside the other), as the trace format requires.
bool tracks_nest(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X")
      tracks[{e["pid"], e["tid"]}].emplace_back(e["ts"], e["ts"].get<double>() + e["dur"].get<double>());
  }
  for (auto& [key, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    std::vector<double> open;  // ends of the enclosing slices
    for (const auto& [start, end] : slices) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (!open.empty() && end > open.back()) return false;
      open.push_back(end);
    }
  }
  return true;
}
}  // namespace

TEST(Timeline, RequestsInFlightAtOnceGetTracksOfTheirOwnAndFlowsLinkReadyToComm) {
  // Three non-blocking requests overlapping without nesting on one lane; compute chunks before them.
  const std::vector<ob::TimelineEvent> events = {{0, "nonblocking:compute", "compute", 0, 0, 0.0, 10.0},
                                                 {0, "nonblocking:compute", "compute", 0, 1, 10.0, 20.0},
                                                 {0, "nonblocking:comm", "iallreduce", 0, 0, 10.0, 25.0},
                                                 {0, "nonblocking:comm", "iallreduce", 0, 1, 20.0, 35.0},
                                                 {0, "nonblocking:comm", "iallreduce", 0, 2, 22.0, 40.0}};
  const auto naive = nlohmann::json::parse(ob::chrome_trace(events).dump());
  EXPECT_TRUE(tracks_nest(naive));
  std::set<std::string> names;
  std::map<int, nlohmann::json> starts, finishes;
  for (const auto& e : naive["traceEvents"]) {
    if (e["name"] == "thread_name") names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "s") starts[e["id"]] = e;
    if (e["ph"] == "f") finishes[e["id"]] = e;
  }
  EXPECT_EQ(
      names,
      (std::set<std::string>{"nonblocking:compute", "nonblocking:comm", "nonblocking:comm #2", "nonblocking:comm #3"}));
  ASSERT_EQ(starts.size(), 3u);  // one arrow per request
  ASSERT_EQ(finishes.size(), 3u);
  // Request 0 became ready when chunk 0's compute ended (10 us); requests 1 and 2 when chunk 1's did (20 us).
  EXPECT_NEAR(starts[0]["ts"].get<double>(), 10.0, 0.01);
  EXPECT_NEAR(starts[1]["ts"].get<double>(), 20.0, 0.01);
  EXPECT_LT(starts[1]["ts"].get<double>(), 20.0);  // inside the compute slice it leaves
  EXPECT_DOUBLE_EQ(finishes[2]["ts"].get<double>(), 22.0);
  EXPECT_EQ(finishes[2]["bp"], "e");

  const auto powered =
      nlohmann::json::parse(ob::chrome_trace(events, {{0, 0, 5.0, 300.0}, {0, 0, 25.0, 450.0}}).dump());
  int counters = 0;
  for (const auto& e : powered["traceEvents"]) {
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "power (W)");
      EXPECT_TRUE(e["args"].contains("gpu 0"));
    }
  }
  EXPECT_EQ(counters, 2);
}

TEST(Timeline, SweepPointsAreProcessGroupsOfTheirOwnAndFlowsStayInsideOne) {
  // Two sweep points of the same rank, lane and iteration: point b's comm starts after point a's compute ended, but
  // its arrow must come from point b's compute.
  std::vector<ob::TimelineEvent> a = {{0, "overlap:compute", "dW", 0, 0, 0.0, 10.0},
                                      {0, "overlap:comm", "allreduce", 0, 0, 10.0, 20.0}};
  std::vector<ob::TimelineEvent> b = {{0, "overlap:compute", "dW", 0, 0, 30.0, 35.0},
                                      {0, "overlap:comm", "allreduce", 0, 0, 40.0, 50.0},
                                      {1, "overlap:compute", "dW", 0, 0, 30.0, 36.0}};
  ob::label_point(a, "bucket_mb=25");
  ob::label_point(b, "bucket_mb=64");
  auto events = a;
  events.insert(events.end(), b.begin(), b.end());
  EXPECT_EQ(ob::timeline_csv(events).rows()[2].back(), "bucket_mb=64");
  const auto trace = nlohmann::json::parse(ob::chrome_trace(events, {{0, 0, 5.0, 300.0}}).dump());
  std::map<int, std::string> processes;
  std::map<int, nlohmann::json> starts, finishes;
  std::map<double, int> pid_at;  // complete events by start time
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") pid_at[e["ts"].get<double>() + 0.1 * e["pid"].get<int>()] = e["pid"];
    if (e["ph"] == "s") starts[e["id"]] = e;
    if (e["ph"] == "f") finishes[e["id"]] = e;
  }
  std::set<std::string> names;
  for (const auto& [pid, name] : processes) names.insert(name);
  EXPECT_EQ(names,
            (std::set<std::string>{"bucket_mb=25 · rank 0", "bucket_mb=64 · rank 0", "bucket_mb=64 · rank 1",
                                   "power · rank 0"}));
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_NEAR(starts[1]["ts"].get<double>(), 35.0, 0.01);  // point b's own compute, not point a's
  EXPECT_EQ(starts[1]["pid"], finishes[1]["pid"]);
  EXPECT_NE(starts[0]["pid"], starts[1]["pid"]);
  EXPECT_TRUE(tracks_nest(trace));
}

TEST(Timeline, CsvReadsBackIntoTheSameEventsAndNamesAMissingColumn) {
  auto events = sample_events();
  events[1].lane = "comm, \"odd\" lane";
  ob::label_point(events, "bucket-mb=25");
  const auto back = ob::timeline_from_csv(ob::CsvTable::parse(ob::timeline_csv(events).to_string()));
  ASSERT_EQ(back.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(back[i].lane, events[i].lane);
    EXPECT_EQ(back[i].point, "bucket-mb=25");
    EXPECT_DOUBLE_EQ(back[i].end_us, events[i].end_us);
  }
  // A timeline written before the point column reads with empty points.
  const auto old =
      ob::timeline_from_csv(ob::CsvTable::parse("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0,-1,1,2\n"));
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].point, "");
  EXPECT_THROW(ob::timeline_from_csv(ob::CsvTable::parse("rank,lane\n0,a\n")), std::invalid_argument);
  EXPECT_THROW(
      ob::timeline_from_csv(ob::CsvTable::parse("rank,lane,name,iter,chunk,start_us,end_us\n0,a,b,0,-1,x,2\n")),
      std::invalid_argument);
  const auto power = ob::power_from_csv(ob::CsvTable::parse("rank,gpu,t_us,power_w\n1,0,20000,450.5\n"));
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(power[0].rank, 1);
  EXPECT_DOUBLE_EQ(power[0].watts, 450.5);
}
