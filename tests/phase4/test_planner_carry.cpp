// The carry schedule's strategies in the planner: the predicted step is the carry schedule's own model (its row's
// `planned`) from the shared compute-only parts, against a schedule computed by hand; --plan auto prefers it where
// the reductions outlast the backward; the calibration file keeps the --carry it was measured with.
#include <gtest/gtest.h>

#include <string>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "tests/phase4/planner_support.hpp"

namespace {

// Two layers of 1 MiB, forward 1 ms, backward steps 0.2 ms, update 0.5 ms, 0.25 ms outside the tasks; nccl and
// `carrying` alike: a bucket of 1 MiB 0.3 ms + 0.01 ms between buckets, no stretch, no slowdown.
phase4::Calibration with_carry(int carry) {
  auto c = phase4::testing::calibration(2, 0.2, 0.0, 1.0);
  auto carrying = c.strategies.front();
  carrying.sync = "nccl-carry";
  carrying.knobs["carry"] = carry;
  c.strategies.push_back(carrying);
  return c;
}

double predicted(const phase4::Calibration& c, const std::string& sync) {
  const auto plan = phase4::plan_by_size(c.layout(), 1.0, 1.0);  // one bucket a layer
  return phase4::predict(c, *c.strategy(sync), plan).step_ms;
}

}  // namespace

TEST(PlannerCarry, ThePredictionIsTheCarrySchedulesOwnModel) {
  // nccl: forward to 1, backward 1..1.2 and 1.2..1.4, bucket 0 1.2..1.51, bucket 1 1.51..1.82; the update and the
  // overhead: 2.57.
  EXPECT_NEAR(predicted(with_carry(2), "nccl"), 2.57, 1e-9);
  // Carrying both layers: bucket 1 0..0.31 and bucket 0 0.31..0.62; each layer 0.5 ms of the forward and 0.25 of the
  // update: layer 1 0.31..1.06, layer 2 1.06..1.81; backward to 2.21, nothing after it but the overhead: 2.46.
  EXPECT_NEAR(predicted(with_carry(2), "nccl-carry"), 2.46, 1e-9);
  // Carrying layer 1 (1, or 0: half the layers): layer 1 0.31..1.06, layer 2 (0.5) to 1.56; backward 1.56..1.96,
  // bucket 0 1.76..2.07; the rest of the update 0.25 and the overhead: 2.57.
  EXPECT_NEAR(predicted(with_carry(1), "nccl-carry"), 2.57, 1e-9);
  EXPECT_NEAR(predicted(with_carry(0), "nccl-carry"), 2.57, 1e-9);
}

TEST(PlannerCarry, PlanAutoCarriesWhereTheReductionsOutlastTheBackwardAndChoosesHowDeep) {
  // Calibrated carrying layer 1 only (2.57 ms on one bucket a layer, as nccl): the planner carries both (2.46 ms or
  // less, on the plan it finds best).
  const auto choices = phase4::choose_plans(with_carry(1), {"nccl", "nccl-carry"});
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices.front().sync, "nccl-carry");
  EXPECT_EQ(choices.front().knobs.at("carry"), 2);
  EXPECT_LE(choices.front().prediction.step_ms, 2.46 + 1e-9);
  EXPECT_LT(choices.front().prediction.step_ms, choices.back().prediction.step_ms);
  EXPECT_EQ(choices.back().knobs.count("carry"), 0u);  // nccl's: none
}

TEST(PlannerCarry, TheCalibrationFileKeepsItsCarry) {
  const auto c = with_carry(3);
  const auto json = c.to_json();
  const auto back = phase4::Calibration::from_json(json, "test");
  EXPECT_EQ(back.strategy("nccl-carry")->knobs.at("carry"), 3);
  auto missing = json;
  for (auto& entry : missing["strategies"]) entry.erase("carry");
  EXPECT_THROW(phase4::Calibration::from_json(missing, "test"), ob::UsageError);
  auto negative = json;
  for (auto& entry : negative["strategies"]) {
    if (entry["sync"] == "nccl-carry") entry["carry"] = -1;
  }
  EXPECT_THROW(phase4::Calibration::from_json(negative, "test"), ob::UsageError);
}
