#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  EXPECT_EQ(table.header(), (std::vector<std::string>{"rank", "lane", "name", "iter", "chunk", "start_us", "end_us"}));
  ASSERT_EQ(table.rows().size(), 3u);
  EXPECT_EQ(table.rows()[1], (std::vector<std::string>{"0", "comm", "allreduce", "0", "0", "10", "15"}));
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
