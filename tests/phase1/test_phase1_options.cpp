#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.hpp"
#include "phase1_cuda_baseline/config.hpp"
#include "phase1_cuda_baseline/report.hpp"
#include "tests/support/test_support.hpp"

namespace {
int exit_code_of(std::vector<std::string> args, phase1::Config* out = nullptr) {
  phase1::Config config;
  const int code = ob::testing::exit_code_of(
      "phase1_cuda_baseline", std::move(args), [&](CLI::App& app) { phase1::add_options(app, config); },
      [&](const CLI::App&) { phase1::validate(config); });
  if (out && code == -1) *out = config;
  return code;
}
}  // namespace

TEST(Phase1Options, DefaultsAndSuffixes) {
  phase1::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.batch, 1024);
  EXPECT_EQ(config.in, 512);
  EXPECT_EQ(config.kernels().size(), 3u);
  ASSERT_EQ(exit_code_of({"--batch", "4K", "--in", "4k", "--out", "4096", "--kernel", "cublas", "--tf32"}, &config),
            -1);
  EXPECT_EQ(config.batch, 4096);
  EXPECT_EQ(config.in, 4096);
  EXPECT_TRUE(config.tf32);
  EXPECT_EQ(config.kernels(), std::vector<phase1::GemmKernel>{phase1::GemmKernel::kCublas});
  EXPECT_EQ(exit_code_of({"--tf32"}), -1);  // with all: applies to cublas only
}

TEST(Phase1Options, DeviceBytesCountsEveryBuffer) {
  phase1::Config config;
  config.batch = 10;
  config.in = 20;
  config.out = 30;
  EXPECT_DOUBLE_EQ(config.device_bytes(), 4.0 * (10 * 20 + 3 * 20 * 30 + 3 * 10 * 30) + 64);
}

TEST(Phase1Options, TheDefaultLearningRateScalesWithTheProblem) {
  phase1::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.lr, 0.0f);  // auto
  // 3 * 1024 * 512 / (32 + sqrt(512))^2 / 4 = 131.77 at the default sizes
  EXPECT_NEAR(config.learning_rate(), 131.77, 0.01);
  // The size that diverged at the old fixed 100: 1000 x 333 -> 17 gets 5.1, below its stable 20.5.
  ASSERT_EQ(exit_code_of({"--batch", "1000", "--in", "333", "--out", "17"}, &config), -1);
  EXPECT_NEAR(config.learning_rate(), 5.13, 0.01);
  ASSERT_EQ(exit_code_of({"--lr", "7"}, &config), -1);
  EXPECT_EQ(config.learning_rate(), 7.0f);
}

TEST(Phase1Report, ALossThatEndsAboveItsStartOrNotFiniteDiverged) {
  EXPECT_FALSE(phase1::diverged({2.0, 1.0, 0.5}));
  EXPECT_TRUE(phase1::diverged({2.0, 5.0, 3.3e38}));
  EXPECT_TRUE(phase1::diverged({2.0, NAN}));
  EXPECT_TRUE(phase1::diverged({2.0, INFINITY}));
  EXPECT_FALSE(phase1::diverged({}));
}
