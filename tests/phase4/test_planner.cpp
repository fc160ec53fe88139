// The planner: the communication fit between and beyond calibrated sizes, the predicted step of a plan against a
// hand-computed schedule, the dynamic programme against every plan of a small model, and the calibration file's
// checks (a missing key, another model or commit: one line naming it).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/planner/model_estimate.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "tests/phase4/planner_support.hpp"

namespace {

using phase4::testing::calibration;
using phase4::testing::kMiB;

TEST(Planner, CommFitIsLinearBetweenSizesAndMarksExtrapolation) {
  const auto c = calibration(4);
  const auto& s = c.strategies[0];
  bool extrapolated = true;
  EXPECT_NEAR(s.comm_ms_at(2 * kMiB, &extrapolated), 0.5, 1e-12);
  EXPECT_FALSE(extrapolated);
  EXPECT_NEAR(s.comm_ms_at(64 * kMiB, &extrapolated), 0.1 + 0.2 * 64, 1e-9);  // the last range's line
  EXPECT_TRUE(extrapolated);
  EXPECT_NEAR(s.comm_ms_at(0.5 * kMiB, &extrapolated), 0.2, 1e-12);
  EXPECT_TRUE(extrapolated);
  phase4::StrategyCalibration varying = s;
  varying.slowdown = {0.0, 0.2, 0.4};
  EXPECT_NEAR(varying.slowdown_at(2 * kMiB), 0.1, 1e-12);  // halfway between 1 and 4 MiB in log2
  EXPECT_NEAR(varying.slowdown_at(100 * kMiB), 0.4, 1e-12);
}

TEST(Planner, PredictionIsTheScheduleWithContention) {
  const auto c = calibration(4);
  // Two buckets of two layers (2 MiB each): ready after steps 1 and 3.
  const auto plan = phase4::plan_by_size(4, 512, 2, 2);
  ASSERT_EQ(plan.buckets.size(), 2u);
  const auto p = phase4::predict(c, c.strategies[0], plan);
  EXPECT_NEAR(p.slowdown, 0.1, 1e-12);
  EXPECT_FALSE(p.extrapolated);
  // Backward steps 1.1 ms from t = 1; buckets 0.5 ms * 1.2 + 0.01 ms = 0.61 ms: the first from 3.2 to 3.81, the
  // second from 5.4 to 6.01; then the update (0.5) and the iteration's overhead (0.25).
  EXPECT_NEAR(p.step_ms, 6.01 + 0.5 + 0.25, 1e-9);
  // A stretch below 1 (ce: the comm stream holds only the all-to-alls) shortens the buckets another one follows;
  // the last takes at least its isolated time: 0.5 * 0.5 + 0.01 ms from 3.2, then 0.5 + 0.01 ms from 5.4.
  const auto piped = calibration(4, 1.0, 0.1, 0.5);
  EXPECT_NEAR(phase4::predict(piped, piped.strategies[0], plan).step_ms, 5.91 + 0.5 + 0.25, 1e-9);
  const auto one = phase4::plan_by_size(4, 512, 4, 4);  // one bucket after the backward: 1.1 ms isolated
  EXPECT_NEAR(phase4::predict(piped, piped.strategies[0], one).step_ms, 5.4 + 0.9 + 0.01 + 0.5 + 0.25, 1e-9);
}

TEST(Planner, OnASlowerLinkTheStretchAddsWhatItAddedOnTheCalibratedOne) {
  const auto c = calibration(4);
  const auto plan = phase4::plan_by_size(4, 512, 4, 4);  // one bucket of 4 MiB after the backward
  // Isolated 0.9 ms calibrated; over a link ten times slower 9 ms, and the stretch adds 0.2 * 0.9 ms, not 0.2 * 9:
  // the backward ends at 1 + 4 * 1.1 = 5.4 ms, then 9 + 0.18 + 0.01, the update and the overhead.
  const phase4::CommTime slow = [&](double bytes) { return 10 * c.strategies[0].comm_ms_at(bytes); };
  EXPECT_NEAR(phase4::predict(c, c.strategies[0], plan, slow).step_ms, 5.4 + 9 + 0.18 + 0.01 + 0.5 + 0.25, 1e-9);
  EXPECT_NEAR(phase4::predict(c, c.strategies[0], plan).step_ms, 5.4 + 0.9 * 1.2 + 0.01 + 0.5 + 0.25, 1e-9);
}

// Every plan whose boundaries fall on the programme's pieces, as end lists.
void every_plan(std::uint64_t pieces, std::uint64_t piece, const std::function<void(std::vector<std::uint64_t>)>& f) {
  for (std::uint64_t mask = 0; mask < (1ull << (pieces - 1)); ++mask) {
    std::vector<std::uint64_t> ends;
    for (std::uint64_t p = 1; p < pieces; ++p) {
      if (mask & (1ull << (p - 1))) ends.push_back(p * piece);
    }
    ends.push_back(pieces * piece);
    f(ends);
  }
}

TEST(Planner, ChoiceIsTheBestOfEveryPlan) {
  // Two layers cut into 8 pieces each: 2^15 plans. With a slowdown that does not depend on size, the programme is
  // exact: its prediction is the least of all.
  // 0.6: every bucket but the last shortened (the last-bucket rule must keep the programme exact).
  for (double stretch : {1.3, 0.6}) {
    for (double step : {0.2, 1.0, 3.0}) {
      auto c = calibration(2, step, 0.15, stretch);
      ASSERT_EQ(phase4::pieces_per_layer(2), 8);
      const auto choice = phase4::choose_plans(c).front();
      phase4::validate_plan(choice.plan, 2, 512);
      double best = std::numeric_limits<double>::infinity();
      every_plan(16, 512 * 512 / 8, [&](std::vector<std::uint64_t> ends) {
        best = std::min(best, phase4::predict(c, c.strategies[0], phase4::plan_from_ends(2, 512, ends)).step_ms);
      });
      EXPECT_NEAR(choice.prediction.step_ms, best, 1e-9) << "step " << step << ", stretch " << stretch;
      EXPECT_NEAR(phase4::predict(c, c.strategies[0], choice.plan).step_ms, choice.prediction.step_ms, 1e-12);
    }
  }
}

TEST(Planner, ChoosesTheFasterStrategyAndBeatsFixedCaps) {
  auto c = calibration(16);
  auto slow = c.strategies[0];
  slow.sync = "ce";  // a registered strategy (its row names its schedule), made three times slower
  for (double& ms : slow.comm_ms) ms *= 3;
  c.strategies.push_back(slow);
  const auto choices = phase4::choose_plans(c);
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].sync, "nccl");
  EXPECT_LE(choices[0].prediction.step_ms, choices[1].prediction.step_ms);
  for (double cap : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    const auto plan = phase4::plan_by_size(16, 512, cap, cap);
    EXPECT_LE(choices[0].prediction.step_ms, phase4::predict(c, c.strategies[0], plan).step_ms + 1e-12) << cap;
  }
  EXPECT_EQ(phase4::choose_plans(c, {"ce"}).front().sync, "ce");
}

TEST(Planner, DdpsBestCapKeepsToTheCandidatesOfAtLeastAMinimum) {
  const auto c = calibration(16);
  double free_ms = 0, kept_ms = 0;
  phase4::best_ddp_cap(c, {}, &free_ms);
  const double kept = phase4::best_ddp_cap(c, {}, &kept_ms, 30);
  EXPECT_GE(kept, 50);
  EXPECT_GE(kept_ms, free_ms - 1e-12);
  EXPECT_DOUBLE_EQ(kept_ms, phase4::predict(c, c.strategies[0], phase4::plan_like_ddp(c.layout(), kept)).step_ms);
  EXPECT_EQ(phase4::best_ddp_cap(c, {}, &kept_ms, 5000), 1024);  // none so large: the largest candidate
}

TEST(Planner, TheCalibratedPlansOwnStepsCorrectThePrediction) {
  auto c = calibration(4);  // 4 MiB of gradient: the 16 MiB size's plan is the 4 MiB one's, one bucket
  auto& s = c.strategies[0];
  auto step = [&](double mb) { return phase4::predict(c, s, phase4::plan_by_size(4, 512, mb, mb)).step_ms; };
  const double one = step(1), four = step(4);
  const auto two = phase4::plan_by_size(4, 512, 2, 2);  // two buckets of 2 MiB
  const double uncorrected = phase4::predict(c, s, two).step_ms;
  EXPECT_EQ(phase4::predict(c, s, two).residual, 1.0);  // none recorded: no correction
  s.plan_mb = {1, 4, 16};
  s.overlap_ms = {1.1 * one, 1.2 * four, 1.2 * four};  // the model 10 % fast on 1 MiB buckets, 20 % on 4 MiB
  EXPECT_NEAR(step(1), 1.1 * one, 1e-9);  // each calibrated plan predicted as measured
  EXPECT_NEAR(step(4), 1.2 * four, 1e-9);
  const auto p = phase4::predict(c, s, two);  // halfway in log2 between 1 and 4 MiB
  EXPECT_NEAR(p.residual, 1.15, 1e-12);
  EXPECT_NEAR(p.step_ms, 1.15 * uncorrected, 1e-9);
  const auto back = phase4::Calibration::from_json(c.to_json(), "cal.json");  // kept in the file
  EXPECT_EQ(back.strategies[0].overlap_ms, s.overlap_ms);
  EXPECT_EQ(back.strategies[0].plan_mb, s.plan_mb);
  auto json = c.to_json();
  json["strategies"][0]["overlap_ms"] = nlohmann::json::array({1.0});
  EXPECT_THROW(phase4::Calibration::from_json(json, "cal.json"), ob::UsageError);
  // The planner chooses by the corrected step: a strategy the model favours but whose plans measured slower loses.
  auto two_strategies = calibration(4);
  auto favoured = two_strategies.strategies[0];
  favoured.sync = "ce";
  favoured.comm_ms = {0.05, 0.4, 1.6};  // faster by the model
  favoured.plan_mb = {1, 4, 16};
  favoured.overlap_ms = {100, 100, 100};  // far slower as measured
  two_strategies.strategies.push_back(favoured);
  EXPECT_EQ(phase4::choose_plans(two_strategies, {}).front().sync, "nccl");
  // The choice is no worse, corrected, than the calibrated plans and one bucket a layer (--plan layer's).
  const auto chosen = phase4::choose_plans(c, {}).front().prediction.step_ms;
  EXPECT_LE(chosen, phase4::predict(c, s, phase4::plan_by_size(4, 512, 1, 1)).step_ms + 1e-9);
  EXPECT_LE(chosen, phase4::predict(c, s, phase4::plan_by_size(4, 512, 4, 4)).step_ms + 1e-9);
}

TEST(Planner, CalibrationFileRoundTripsAndNamesWhatIsWrong) {
  const auto c = calibration(4);
  const auto back = phase4::Calibration::from_json(c.to_json(), "cal.json");
  EXPECT_EQ(back.mismatch(c), "");
  EXPECT_EQ(back.step_ms, c.step_ms);
  EXPECT_EQ(back.strategies[0].comm_ms, c.strategies[0].comm_ms);

  auto other = c;
  other.hidden = 1024;
  EXPECT_EQ(back.mismatch(other), "hidden is 1024 here but 512 in the calibration");
  other = c;
  other.graph = true;  // replayed steps are not the eager steps the calibration timed
  EXPECT_EQ(back.mismatch(other), "graph is true here but false in the calibration");
  other = c;
  other.commit = "def456";
  EXPECT_EQ(back.mismatch(other), "the commit is \"def456\" here but \"abc123\" in the calibration");

  auto expect_usage = [](nlohmann::json json, const std::string& words) {
    try {
      phase4::Calibration::from_json(json, "cal.json");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const ob::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("--calibration: 'cal.json' is invalid: ", 0), 0u) << e.what();
    }
  };
  auto json = c.to_json();
  json["model"].erase("graph");  // a calibration made before the flag was recorded: eager
  EXPECT_FALSE(phase4::Calibration::from_json(json, "cal.json").graph);
  json["strategies"][0].erase("gap_ms");  // a calibration made before gaps were measured: none
  EXPECT_EQ(phase4::Calibration::from_json(json, "cal.json").strategies[0].gap_ms, std::vector<double>(3, 0.0));
  json["strategies"][0]["gap_ms"] = nlohmann::json::array({0.0, -1.0, 0.0});
  expect_usage(json, "gap_ms must be >= 0");
  json = c.to_json();
  json["strategies"][0].erase("stretch");
  expect_usage(json, "missing key 'strategies[0].stretch'");
  json = c.to_json();
  json["compute"]["step_ms"] = nlohmann::json::array({1.0});
  expect_usage(json, "one time per layer");
  json = c.to_json();
  json["strategies"][0]["bytes"] = nlohmann::json::array({4.0, 1.0, 16.0});
  expect_usage(json, "bytes must ascend");
  json = c.to_json();
  json["model"]["hidden"] = "wide";
  expect_usage(json, "key 'model.hidden' has the wrong type");
  json["model"]["hidden"] = std::uint64_t{4294971392};  // 2^32 + 4096: never read as 4096 (issue 83)
  expect_usage(json, "key 'model.hidden' has the wrong type");
  json["model"]["hidden"] = 4096.5;
  expect_usage(json, "key 'model.hidden' has the wrong type");
  json = c.to_json();
  json["kind"] = "something else";
  expect_usage(json, "not a phase 4 calibration");
}

}  // namespace

TEST(Planner, AModelsEstimateKeepsItsTensorsAndTheCalibratedGemmRates) {
  // 4 layers of 512, batch 64: forward 1 ms for 4 GEMMs of 2 x 64 x 512^2 flop; backward 4 x 1 ms for 7 such GEMMs.
  const phase4::Calibration c = calibration(4);
  const phase4::GemmRates rates = phase4::gemm_rates(c);
  const double gemm = 2.0 * 64 * 512 * 512;
  EXPECT_DOUBLE_EQ(rates.forward, 4 * gemm / 1.0);
  EXPECT_DOUBLE_EQ(rates.backward, 7 * gemm / 4.0);
  const phase4::ModelWork work{phase4::load_transformer("gpt2"), 2, 128, 2};
  const phase4::Calibration e = phase4::estimate_model(c, work);
  const auto tensors = phase4::parameter_tensors(work.shape, 2);
  ASSERT_EQ(e.step_ms.size(), tensors.size());
  ASSERT_EQ(e.layout().steps(), static_cast<int>(tensors.size()));
  EXPECT_EQ(e.layout().elements(), static_cast<std::uint64_t>(phase4::parameter_count(work.shape, 2)));
  EXPECT_EQ(e.model, "gpt2");
  const double tokens = 128.0 * 2;
  const double core = phase4::attention_flops_per_token(work.shape, 128) * tokens;
  double forward = 0;
  for (std::size_t s = 0; s < tensors.size(); ++s) {
    const double flop = tensors[s].forward_flops_per_token() * tokens;
    const bool v = tensors[s].name.find("attn.v") != std::string::npos && tensors[s].gemm;
    forward += flop + (v ? core : 0);
    // dW and dX of every GEMM, the attention core's backward before V's; nothing for vectors and lookups. GPT-2's
    // LM head is its tied embedding, completed last: its GEMMs run first, in step 0 (the final norm's).
    const double head = 2 * tensors.back().forward_flops_per_token() * tokens / rates.backward;
    const double expected = s == 0 ? head
        : s + 1 == tensors.size()  ? 0
                                   : (2 * flop + (v ? 2 * core : 0)) / rates.backward;
    EXPECT_NEAR(e.step_ms[s], expected, 1e-12) << tensors[s].name;
  }
  ASSERT_EQ(tensors.front().name, "final_norm");
  EXPECT_NEAR(e.forward_ms, forward / rates.forward, 1e-12);
  EXPECT_NEAR(e.update_ms, 0.5 * static_cast<double>(e.layout().elements()) / (4.0 * 512 * 512), 1e-12);
  // The planner runs on it: its plan covers the model's gradient, ready steps from the tensors' ends.
  const auto choice = phase4::choose_plans(e).front();
  phase4::validate_plan(choice.plan, e.layout());
  EXPECT_GE(choice.prediction.step_ms, e.forward_ms + e.update_ms);
  // The calibrated model's whole gradient (4 MiB here: calibration() measures up to 16 MiB) overlapped nothing
  // when measured: sizes from it up take the slowdown and stretch of the size before.
  phase4::Calibration whole = calibration(16);  // 16 MiB: its last size is the whole gradient
  whole.strategies[0].slowdown = {0.3, 0.2, 0.0};
  whole.strategies[0].stretch = {1.3, 1.2, 1.0};
  const phase4::Calibration estimated = phase4::estimate_model(whole, work);
  EXPECT_EQ(estimated.strategies[0].slowdown, (std::vector<double>{0.3, 0.2, 0.2}));
  EXPECT_EQ(estimated.strategies[0].stretch, (std::vector<double>{1.3, 1.2, 1.2}));
  EXPECT_EQ(e.strategies[0].slowdown, c.strategies[0].slowdown);  // 4 MiB model, sizes up to 16: none was whole
  // Accumulation micro-steps hide the forward's own time: refused, naming the option.
  phase4::Calibration accumulated = c;
  accumulated.accum_steps = 2;
  try {
    phase4::estimate_model(accumulated, work);
    FAIL() << "an accumulating calibration was taken";
  } catch (const ob::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--accum-steps 1"), std::string::npos) << e.what();
  }
}

TEST(Planner, CalibratedSizesGrowByFourFromOneMibAndNeverHoldMoreThan1024Buckets) {
  phase4::ModelSpec config;
  config.hidden = 4096, config.layers = 16;  // 64 MiB a layer, 1 GiB in all: 1 MiB is 1024 buckets
  const double mib = 1 << 20;
  EXPECT_EQ(phase4::calibration_sizes(config),
            (std::vector<double>{mib, 4 * mib, 16 * mib, 64 * mib, 256 * mib, 1024 * mib}));
  config.hidden = 512, config.layers = 4;  // 4 MiB in all: from an eighth of it
  EXPECT_EQ(phase4::calibration_sizes(config), (std::vector<double>{mib / 2, 2 * mib, 4 * mib}));
  config.hidden = 8192, config.layers = 40;  // 10 GiB, llama3-8b's 8 blocks' size: 10 MiB buckets, not 10,240 of 1 MiB
  const auto sizes = phase4::calibration_sizes(config);
  ASSERT_EQ(sizes.size(), 6u);
  EXPECT_DOUBLE_EQ(sizes.front(), 10 * mib);
  EXPECT_DOUBLE_EQ(sizes[4], 2560 * mib);
  EXPECT_DOUBLE_EQ(sizes.back(), 10240 * mib);
}
