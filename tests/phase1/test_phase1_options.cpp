#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "phase1_cuda_baseline/config.hpp"

namespace {
int exit_code_of(std::vector<std::string> args, phase1::Config* out = nullptr) {
  CLI::App app("t", "phase1_cuda_baseline");
  phase1::Config config;
  phase1::add_options(app, config);
  args.insert(args.begin(), "phase1_cuda_baseline");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (auto code = ob::parse_options(app, static_cast<int>(argv.size()), argv.data(), false)) return *code;
  try {
    phase1::validate(config);
  } catch (const ob::UsageError&) {
    return ob::kExitUsage;
  }
  if (out) *out = config;
  return -1;
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

TEST(Phase1Options, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--batch", "0"},     {"--batch", "-5"},          {"--in", "abc"},        {"--out", "2G"},
      {"--batch", "1.5"},   {"--kernel", "fast"},       {"--kernel", "tiled", "--tf32"},
      {"--kernel", "naive", "--tf32"},                  {"--memory", "pinned"}, {"--lr", "nan"},
      {"--lr", "-1"},       {"--device", "-1"},         {"--iters", "0"},       {"--batch", "1M", "--in", "1M"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(exit_code_of(args), ob::kExitUsage) << joined;
  }
}

TEST(Phase1Options, DeviceBytesCountsEveryBuffer) {
  phase1::Config config;
  config.batch = 10;
  config.in = 20;
  config.out = 30;
  EXPECT_DOUBLE_EQ(config.device_bytes(), 4.0 * (10 * 20 + 3 * 20 * 30 + 3 * 10 * 30) + 64);
}
