// A schedule with a knob of its own is one file (core/knobs.hpp, google/benchmark's ArgNames()/Ranges()): this file,
// in the CPU test build only, registers a schedule whose row declares a whole-number knob (--test-depth: its range,
// default, help and the planner's search) and a strategy it drives, with no edit anywhere else. The driver builds
// --test-depth, --sweep test-depth=..., the point's label, the summary's column, the calibration's field and the
// planner's search from the row alone; nothing shared names the knob.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/sweep_options.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"
#include "tests/phase4/phase4_options_support.hpp"
#include "tests/phase4/planner_support.hpp"

using phase4::testing::exit_code_of;

namespace {

constexpr const char* kDepth = "test-depth";

// Its step: the all-reduce schedule's critical path, plus 0.1 ms for every layer its depth is away from 2, so that
// the planner's search has one best value.
double penalty(const phase4::SyncSpec& sync) { return 0.1 * std::abs(sync.knob(kDepth) - 2); }

phase4::ScheduleRow depth_row() {
  phase4::ScheduleRow row(
      "test-depth-schedule", "the all-reduce schedule with a depth of its own",
      [](const phase4::MeasuredParts& p, const phase4::SyncSpec& sync) { return p.t_comp + penalty(sync); }, nullptr);
  row.knobs = {{kDepth, 0, 9, 0, "Test strategies: a depth of their own (0: none)", [](int layers) {
                  std::vector<int> values;
                  for (int v = 1; v <= layers; ++v) values.push_back(v);
                  return values;
                }}};
  row.planned = [](const phase4::PlannedStep& step, const phase4::SyncSpec& sync) {
    double compute_end = step.forward_ms, comm_end = 0;
    ob::run_pipeline(step.backward_ms, step.bucket_ms, step.plan.ready_steps(), compute_end, comm_end);
    return std::max(compute_end, comm_end) + step.update_ms + penalty(sync);
  };
  return row;
}
const phase4::RegisterSchedule kDepthSchedule(depth_row());

phase4::SyncRow depth_sync() {
  phase4::SyncRow row;
  row.name = "test-depth-sync";
  row.help = "nccl's all-reduce under the test-depth schedule";
  row.schedule = "test-depth-schedule";
  row.reference = "nccl";
  return row;
}
const phase4::RegisterSync kDepthSync(depth_sync());

}  // namespace

TEST(ScheduleKnob, ItsRowMakesTheOptionTheSweepAndTheLabel) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sync", "test-depth-sync", "--test-depth", "3"}, &config), -1);
  EXPECT_EQ(config.knobs.at(kDepth), 3);
  EXPECT_EQ(config.sync_spec().knob(kDepth), 3);  // what the schedule reads
  EXPECT_EQ(config.point_label(), "bucket-mb=25, sync=test-depth-sync, test-depth=3");
  EXPECT_EQ(exit_code_of({"--sync", "test-depth-sync", "--test-depth", "10"}), ob::kExitUsage);  // its range
  EXPECT_EQ(exit_code_of({"--test-depth", "1"}), ob::kExitUsage);  // nccl's schedule would ignore it
  EXPECT_EQ(exit_code_of({"--test-depth", "0"}), -1);  // its default asks nothing
  ASSERT_EQ(exit_code_of({"--sync", "test-depth-sync", "--sweep", "test-depth=0,4"}, &config), -1);
  const auto points = config.sweep_points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].point_label(), "bucket-mb=25, sync=test-depth-sync");
  EXPECT_EQ(points[1].point_label(), "bucket-mb=25, sync=test-depth-sync, test-depth=4");
  EXPECT_EQ(exit_code_of({"--sync", "test-depth-sync", "--sweep", "test-depth=0,10"}), ob::kExitUsage);
  const auto names = phase4::sweep_names();
  EXPECT_NE(std::find(names.begin(), names.end(), kDepth), names.end());
}

TEST(ScheduleKnob, ItsColumnFollowsTheDeclaredOnes) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sync", "test-depth-sync", "--test-depth", "3"}, &config), -1);
  const auto columns = phase4::knob_columns(config.knobs);  // the summary's (driver/runner.cpp, base_row)
  std::vector<std::string> names;
  for (const auto& [name, value] : columns) names.push_back(name);
  // schema.json's summary.knobs first (the sharded and carry schedules'), then the undeclared test knob's
  EXPECT_EQ(names, (std::vector<std::string>{"prefetch", "carry", "test_depth"}));
  EXPECT_EQ(columns.back().second, 3);
}

TEST(ScheduleKnob, TheCalibrationKeepsItAndThePlannerSearchesIt) {
  auto c = phase4::testing::calibration(4, 0.2, 0.0, 1.0);
  auto own = c.strategies.front();
  own.sync = "test-depth-sync";
  own.knobs[kDepth] = 5;
  c.strategies.push_back(own);
  const auto json = c.to_json();
  EXPECT_EQ(json["strategies"][1][kDepth], 5);  // a schedule with no section of its own: in the strategy's entry
  const auto back = phase4::Calibration::from_json(json, "c.json");
  EXPECT_EQ(back.strategy("test-depth-sync")->knobs.at(kDepth), 5);
  auto missing = json;
  missing["strategies"][1].erase(kDepth);
  EXPECT_THROW(phase4::Calibration::from_json(missing, "c.json"), ob::UsageError);
  auto outside = json;
  outside["strategies"][1][kDepth] = 10;
  EXPECT_THROW(phase4::Calibration::from_json(outside, "c.json"), ob::UsageError);
  // The prediction keeps the calibrated depth (3 away from 2: 0.3 ms more than nccl's); the choice searches it.
  const auto plan = phase4::plan_by_size(c.layout(), 1.0, 1.0);
  const double nccl = phase4::predict(c, c.strategies[0], plan).step_ms;
  EXPECT_NEAR(phase4::predict(c, c.strategies[1], plan).step_ms, nccl + 0.3, 1e-9);
  const auto choices = phase4::choose_plans(c, {"test-depth-sync"});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices.front().knobs.at(kDepth), 2);
}
