#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "phase1_cuda_baseline/config.hpp"
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
  ASSERT_EQ(exit_code_of({"--batch", "4K", "--in", "4k", "--out", "4096", "--kernel", "cublas", "--tf32"}, &config), -1);
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
