// The sharded strategies in the planner: the predicted step replays the sharded schedule's forward (deferred updates,
// gathers, layers) and then the reductions' pipeline behind the gathers, against a schedule computed by hand; its
// plans hold whole tensors; --plan auto chooses among every calibrated strategy; other rank counts scale its gathers
// and updates; the calibration file's sharded part is written, read and checked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "tests/phase4/planner_support.hpp"

namespace {

using phase4::testing::kMiB;

// Two layers of 1 MiB; besides nccl, `sync` calibrated at 1 and 2 MiB (one layer, both): comm 0.1 ms + 0.2 ms per
// MiB, 0.01 ms between buckets, stretch 1.2, slowdown 0.1; its step: forward layers 0.4 ms slowed 25 % under
// overlap, deferred updates 0.1 ms, gathers 0.3 ms stretched 1.5 times, the forward's rest 0.2 ms, backward steps
// 1 ms, and 0.3 ms of the iteration outside its tasks.
phase4::Calibration sharded_calibration(const std::string& sync = "sharded") {
  phase4::Calibration c = phase4::testing::calibration(2);
  phase4::StrategyCalibration s;
  s.sync = sync;
  for (double mib : {1.0, 2.0}) {
    s.bytes.push_back(mib * kMiB);
    s.comm_ms.push_back(0.1 + 0.2 * mib);
    s.gap_ms.push_back(0.01);
    s.stretch.push_back(1.2);
    s.slowdown.push_back(0.1);
  }
  phase4::ScheduleCalibration& h = s.schedule;
  h.layer_ms = {0.4, 0.4};
  h.part_ms = {{"update", {0.1, 0.1}}, {"gather", {0.3, 0.3}}};
  h.step_ms = {1.0, 1.0};
  h.stretch = {{"gather", 1.5}};
  h.forward_slowdown = 0.25;
  h.forward_rest_ms = 0.2;
  h.iteration_ms = 0.8 + 0.2 + 0.2 + 2.0 + 0.3;
  c.strategies.push_back(s);
  return c;
}

TEST(PlannerSharded, PredictionIsTheShardedScheduleWithContention) {
  const auto c = sharded_calibration();
  const auto& s = *c.strategy("sharded");
  const auto plan = phase4::plan_by_size(2, 512, 1, 1);  // a bucket per layer
  ASSERT_EQ(plan.buckets.size(), 2u);
  // Forward: both updates and gathers first (prefetch 0): updates end at 0.1 and 0.2, gathers (0.45 ms) at 0.55 and
  // 1.0; layers of 0.5 ms from 0.55 to 1.05 and to 1.55, the rest to 1.75. Backward steps of 1.1 ms end at 2.85 and
  // 3.95; buckets of 0.3 * 1.2 + 0.01 = 0.37 ms behind the gathers: 2.85 to 3.22, 3.95 to 4.32; then the overhead.
  const auto p = phase4::predict(c, s, plan);
  EXPECT_NEAR(p.slowdown, 0.1, 1e-12);
  EXPECT_NEAR(p.step_ms, 4.32 + 0.3, 1e-9);
}

TEST(PlannerSharded, OtherRankCountsScaleTheGathersAndTheUpdates) {
  const auto c = sharded_calibration();
  const auto& s = *c.strategy("sharded");
  const auto plan = phase4::plan_by_size(2, 512, 1, 1);
  // On 4 ranks over a link twice as slow: each rank updates half the slices (0.05 ms), gathers take twice as long
  // (0.9 ms stretched), buckets 0.6 + 0.2 * 0.3 + 0.01 = 0.67 ms. Forward: updates end at 0.05 and 0.1, gathers at
  // 0.95 and 1.85; layers from 0.95 to 1.45 and from 1.85 to 2.35, the rest to 2.55. Backward steps end at 3.65 and
  // 4.75; buckets to 4.32 and 5.42.
  const phase4::Target target([&](double bytes) { return 2 * s.comm_ms_at(bytes); }, 4);
  EXPECT_NEAR(phase4::predict(c, s, plan, target).step_ms, 5.42 + 0.3, 1e-9);
}

TEST(PlannerSharded, CopyEngineGathersRiseByTheirCopiesAndItsUpdateByItsTraffic) {
  const auto c = sharded_calibration("sharded-ce");
  const auto& s = *c.strategy("sharded-ce");
  const auto plan = phase4::plan_by_size(2, 512, 1, 1);
  // sharded-ce on 4 ranks: a gather of the 1 MiB layer is a copy from each peer; its own line there (0.1 ms + 0.2 ms
  // per MiB on 2 ranks: one copy) read as 0.1 ms a copy and 0.2 ms per MiB of the (r - 1) / r share: 3 * 0.1 + 0.2 *
  // 0.75 / 0.5 = 0.6 ms against 0.3, so 0.3 * 1.5 * 2 = 0.9 ms stretched (the link's doubling is the buckets' only).
  // Its update reads every rank's received slice and its weight slice twice: 1 + 2 / 4 against 1 + 2 / 2, so 0.075
  // ms. Forward: updates end at 0.075 and 0.15, gathers at 0.975 and 1.875; layers from 0.975 to 1.475 and from
  // 1.875 to 2.375, the rest to 2.575. Backward steps end at 3.675 and 4.775; buckets of 0.67 ms to 4.345 and 5.445.
  const phase4::Target target([&](double bytes) { return 2 * s.comm_ms_at(bytes); }, 4);
  EXPECT_NEAR(phase4::predict(c, s, plan, target).step_ms, 5.445 + 0.3, 1e-9);
  // On its calibrated 2 ranks over that slower link, the link's rise is its gathers' too, as for sharded's.
  const phase4::Target two([&](double bytes) { return 2 * s.comm_ms_at(bytes); }, 2);
  const auto nccl = sharded_calibration("sharded");
  EXPECT_NEAR(phase4::predict(c, s, plan, two).step_ms,
              phase4::predict(nccl, *nccl.strategy("sharded"), plan, two).step_ms, 1e-12);
}

TEST(PlannerSharded, ItsPlansHoldWholeTensorsAndTheBestStrategyIsChosen) {
  for (const std::string sync : {"sharded", "sharded-ce"}) {
    auto c = sharded_calibration(sync);
    auto choices = phase4::choose_plans(c);
    ASSERT_EQ(choices.size(), 2u);
    const auto& sharded = choices[0].sync == sync ? choices[0] : choices[1];
    ASSERT_EQ(sharded.sync, sync);
    // One bucket after the backward (0.5 * 1.2 + 0.01 ms from 3.95) loses to a bucket per layer (4.32).
    ASSERT_EQ(sharded.plan.buckets.size(), 2u);
    EXPECT_EQ(sharded.plan.buckets[0].end, 512u * 512u);
    EXPECT_NEAR(sharded.prediction.step_ms, 4.62, 1e-9);
    // nccl's best: its 1.1 ms steps from 1 ms end at 3.2, its last piece's all-reduce shortly after, then the update
    // (0.5) and the overhead (0.25): below 4.62, so nccl first. With an update of 1.5 ms, which the sharded strategy
    // does not wait for at the step's end, the sharded plan comes first.
    EXPECT_EQ(choices[0].sync, "nccl");
    EXPECT_LT(choices[0].prediction.step_ms, 4.62);
    c.update_ms += 1.0, c.iteration_ms += 1.0;
    choices = phase4::choose_plans(c);
    EXPECT_EQ(choices[0].sync, sync);
    EXPECT_GT(choices[1].prediction.step_ms, 4.62 + 0.5);
  }
  // DDP's cap is predicted with the all-reduces; a calibration of sharded strategies only has none.
  auto c = sharded_calibration();
  EXPECT_EQ(phase4::ddp_like(c)->sync, "nccl");
  double ddp_ms = 0;
  EXPECT_FALSE(std::isnan(phase4::best_ddp_cap(c, {}, &ddp_ms)));
  c.strategies.erase(c.strategies.begin());
  EXPECT_EQ(phase4::ddp_like(c), nullptr);
  EXPECT_TRUE(std::isnan(phase4::best_ddp_cap(c, {}, &ddp_ms)) && std::isnan(ddp_ms));
}

TEST(PlannerSharded, ALargerModelIsCutAtItsLayersOnly) {
  // A larger model whose layers are cut into pieces for nccl: the sharded plan ends on layers only.
  auto c = phase4::testing::calibration(8);
  auto s = sharded_calibration().strategies.back();
  s.schedule.layer_ms.assign(8, 0.4), s.schedule.part_ms["update"].assign(8, 0.1);
  s.schedule.part_ms["gather"].assign(8, 0.3), s.schedule.step_ms.assign(8, 1.0);
  c.strategies.push_back(s);
  for (const auto& choice : phase4::choose_plans(c, {"sharded"})) {
    for (const auto& bucket : choice.plan.buckets) EXPECT_EQ(bucket.end % (512u * 512u), 0u);
  }
}

TEST(PlannerSharded, TheCalibrationFileKeepsAndChecksTheShardedStep) {
  const auto c = sharded_calibration();
  const auto back = phase4::Calibration::from_json(c.to_json(), "c.json");
  const auto& h = back.strategy("sharded")->schedule;
  EXPECT_EQ(h.layer_ms, c.strategies.back().schedule.layer_ms);
  EXPECT_EQ(h.part_ms, c.strategies.back().schedule.part_ms);
  EXPECT_DOUBLE_EQ(h.stretch.at("gather"), 1.5);
  EXPECT_DOUBLE_EQ(h.iteration_ms, c.strategies.back().schedule.iteration_ms);
  EXPECT_TRUE(back.strategy("nccl")->schedule.empty());
  // The file's keys are the schedule's name and its parts' (the format published calibrations hold).
  const auto written = c.to_json()["strategies"][1]["sharded"];
  for (const char* key : {"update_ms", "gather_ms", "gather_stretch", "layer_ms", "step_ms", "prefetch"})
    EXPECT_TRUE(written.contains(key)) << key;
  auto expect_refused = [](nlohmann::json json, const std::string& words) {
    try {
      phase4::Calibration::from_json(json, "c.json");
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const ob::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  auto json = c.to_json();
  json["strategies"][1].erase("sharded");
  expect_refused(json, "missing key 'strategies[1].sharded'");
  json = c.to_json();
  json["strategies"][1]["sharded"]["layer_ms"] = {0.4, 0.4, 0.4};
  expect_refused(json, "layer_ms, update_ms and gather_ms need one time per layer");
  json = c.to_json();
  json["strategies"][1]["sharded"]["gather_stretch"] = -1;
  expect_refused(json, "gather_stretch");
  json = c.to_json();
  json["strategies"][1]["sharded"]["prefetch"] = -2;
  expect_refused(json, "prefetch must be >= 0");
}

}  // namespace
