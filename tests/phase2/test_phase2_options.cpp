#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase2_omp_overlap/config.hpp"

namespace {

// Parses and validates like main does: the exit code, or -1 when the options are accepted.
int exit_code_of(std::vector<std::string> args, phase2::Config* out = nullptr) {
  CLI::App app("t", "phase2_omp_overlap");
  phase2::Config config;
  phase2::add_options(app, config);
  args.insert(args.begin(), "phase2_omp_overlap");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (auto code = ob::parse_options(app, static_cast<int>(argv.size()), argv.data(), false)) return *code;
  try {
    phase2::validate(config);
    ob::resolve_output_paths("phase2", config.common);
  } catch (const ob::UsageError&) {
    return ob::kExitUsage;
  }
  if (out) *out = config;
  return -1;
}

}  // namespace

TEST(Phase2Options, Defaults) {
  phase2::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.chunks, 10);
  EXPECT_EQ(config.workload, "synthetic");
  EXPECT_EQ(config.modes(), (std::vector<std::string>{"seq", "overlap", "compute", "comm"}));
  EXPECT_GE(config.compute_threads(), 1);
}

TEST(Phase2Options, AcceptedValues) {
  phase2::Config config;
  ASSERT_EQ(exit_code_of({"--workload", "real", "--chunk-rows", "1K", "--hidden", "64", "--threads", "3", "--mode",
                          "overlap", "--jitter", "0.5"},
                         &config),
            -1);
  EXPECT_EQ(config.chunk_rows, 1024);
  EXPECT_EQ(config.compute_threads(), 2);
  EXPECT_EQ(config.modes(), (std::vector<std::string>{"overlap"}));
}

TEST(Phase2Options, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--chunks", "0"},         {"--chunks", "-1"},         {"--chunks", "x"},
      {"--compute-ms", "-1"},    {"--compute-ms", "nan"},    {"--comm-ms", "inf"},
      {"--jitter", "1.5"},       {"--jitter", "-0.1"},       {"--threads", "-2"},
      {"--mode", "fast"},        {"--workload", "fake"},     {"--hidden", "0"},
      {"--chunk-rows", "0"},     {"--virtual-ranks", "0"},   {"--iters", "0"},
      {"--csv", "/no/such/dir/x.csv"},
      {"--workload", "real", "--hidden", "60000", "--virtual-ranks", "4000"},  // sums no longer exact in fp32
      {"--workload", "real", "--chunk-rows", "16M", "--hidden", "65536"},      // more memory than the machine
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(exit_code_of(args), ob::kExitUsage) << joined;
  }
}
