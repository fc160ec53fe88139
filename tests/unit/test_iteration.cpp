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
