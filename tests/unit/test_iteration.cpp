#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/iteration.hpp"

TEST(SteadyWarmup, TwoWindowsWhoseMediansAgreeAreSteady) {
  EXPECT_FALSE(ob::warmup_is_steady({}));
  EXPECT_FALSE(ob::warmup_is_steady({5, 5, 5, 5, 5}));  // fewer than two windows
  EXPECT_TRUE(ob::warmup_is_steady({90, 5, 5, 5, 5, 5}));  // only the last two windows count
  EXPECT_TRUE(ob::warmup_is_steady({5.1, 5.0, 4.9, 5.2, 5.0, 5.1}));
  EXPECT_FALSE(ob::warmup_is_steady({8, 7, 6, 5, 4, 3}));  // still falling: 7 against 4
  EXPECT_TRUE(ob::warmup_is_steady({20, 5, 5.2, 5.2, 9, 5}));  // a lone outlier moves no median
}

TEST(SteadyWarmup, TheCapIsFourTimesTheLargerOfWarmupAndTwoWindows) {
  EXPECT_EQ(ob::max_warmup({ob::Mode::kSeq, 0, 10}), 0);  // no warm-up asked: none
  EXPECT_EQ(ob::max_warmup({ob::Mode::kSeq, 3, 10}), 4 * 2 * ob::kSteadyWindow);
  EXPECT_EQ(ob::max_warmup({ob::Mode::kSeq, 10, 10}), 40);
  EXPECT_EQ(ob::max_warmup({ob::Mode::kSeq, 3, 10, 5}), 0);  // fixed steps: no warm-up
}

namespace {
// Runs the loop with steps whose warm-up lasts `warmup_ms(k)` at warm-up iteration k; returns (warm-ups, samples).
std::pair<int, std::size_t> loop(int warmup, int iters, int (*warmup_ms)(int)) {
  int warmups = 0;
  ob::LoopHooks hooks;
  hooks.step = [&](const ob::Iteration& it) {
    if (!it.timed) std::this_thread::sleep_for(std::chrono::milliseconds(warmup_ms(warmups++)));
  };
  const auto samples = ob::run_iterations({ob::Mode::kSeq, warmup, iters}, hooks);
  return {warmups, samples.size()};
}
}  // namespace

TEST(SteadyWarmup, WarmupGoesOnWhileStepsStillSpeedUpThenTimesEveryIteration) {
  // 64, 32, 16, 8 ms, ... down to 2: the first windows' medians differ by far more than 5 % whatever the load (a
  // busy machine lengthens sleeps, never shortens them), so warm-up passes the 3 asked for; it stops by the cap.
  const auto [warmups, samples] = loop(3, 4, [](int k) { return std::max(2, 64 >> k); });
  EXPECT_GE(warmups, 2 * ob::kSteadyWindow + 1);
  EXPECT_LE(warmups, ob::max_warmup({ob::Mode::kSeq, 3, 4}));
  EXPECT_EQ(samples, 4u);
  // No warm-up asked: none run, whatever the times.
  EXPECT_EQ(loop(0, 2, [](int) { return 1; }).first, 0);
}

TEST(MinimumTime, TimedIterationsFillTheTimeByTheLastWarmupWindowBetweenItersAndTheCap) {
  ob::LoopPlan plan{ob::Mode::kSeq, 3, 10};
  EXPECT_EQ(ob::timed_iters(plan, {2, 2, 2}), 10);  // no minimum time: --iters
  plan.min_time_ms = 200;
  EXPECT_EQ(ob::timed_iters(plan, {}), 10);  // no warm-up to estimate the step from: --iters
  EXPECT_EQ(ob::timed_iters(plan, {90, 2, 2.1, 1.9}), 100);  // the last window's median, 2 ms: 200 / 2
  EXPECT_EQ(ob::timed_iters(plan, {3, 3, 3}), 67);  // rounded up
  EXPECT_EQ(ob::timed_iters(plan, {50, 50, 50}), 10);  // a long step: never fewer than --iters
  EXPECT_EQ(ob::timed_iters(plan, {0.001, 0.001, 0.001}), ob::kMostMinTimeIters);  // a tiny one: the cap
  EXPECT_EQ(ob::most_timed_iters(10, 0), 10);
  EXPECT_EQ(ob::most_timed_iters(10, 200), ob::kMostMinTimeIters);
  EXPECT_EQ(ob::most_timed_iters(5000, 200), 5000);  // --iters above the cap stays
}

TEST(MinimumTime, TheLoopTimesAsManyIterationsAsTheWarmupSays) {
  // Warm-up steps of at least 4 ms (a busy machine lengthens them, never shortens them): with a 40 ms minimum the
  // loop times between --iters and 10 iterations, and marks only the final one last.
  int lasts = 0, last_index = -1, count = 0;
  ob::LoopHooks hooks;
  hooks.step = [&](const ob::Iteration& it) {
    if (!it.timed) std::this_thread::sleep_for(std::chrono::milliseconds(4));
    lasts += it.last ? 1 : 0;
    last_index = it.last ? it.index : last_index;
    ++count;
  };
  ob::LoopPlan plan{ob::Mode::kSeq, 1, 2};
  plan.min_time_ms = 40;
  const auto samples = ob::run_iterations(plan, hooks);
  EXPECT_GE(samples.size(), 2u);
  EXPECT_LE(samples.size(), 10u);
  EXPECT_EQ(lasts, 1);
  EXPECT_EQ(last_index, count - 1);
  // Fixed steps: the last of them is the last.
  lasts = 0;
  count = 0;
  EXPECT_TRUE(ob::run_iterations({ob::Mode::kSeq, 0, 0, 3}, hooks).empty());
  EXPECT_EQ(lasts, 1);
  EXPECT_EQ(last_index, 2);
}
