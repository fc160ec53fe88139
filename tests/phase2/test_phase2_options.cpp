#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase2_omp_overlap/config.hpp"
#include "tests/support/test_support.hpp"

namespace {

// Parses and validates like main does: the exit code, or -1 when the options are accepted.
int exit_code_of(std::vector<std::string> args, phase2::Config* out = nullptr) {
  phase2::Config config;
  const int code = ob::testing::exit_code_of(
      "phase2_omp_overlap", std::move(args), [&](CLI::App& app) { phase2::add_options(app, config); },
      [&](const CLI::App&) {
        phase2::validate(config);
        ob::resolve_output_paths("phase2", config.common);
      });
  if (out && code == -1) *out = config;
  return code;
}

}  // namespace

TEST(Phase2Options, Defaults) {
  phase2::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.chunks, 10);
  EXPECT_EQ(config.workload, "synthetic");
  EXPECT_EQ(config.modes(),
            (std::vector<ob::Mode>{ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, ob::Mode::kOverlap}));
  EXPECT_GE(config.compute_threads(), 1);
  // The default team: no more than one thread per 8 rows of a chunk, and never the communication thread's.
  EXPECT_LE(config.compute_threads(), 64 / phase2::kRowsPerThread);
  EXPECT_LE(config.compute_threads(), std::max(1, omp_get_max_threads() - 1));
  ASSERT_EQ(exit_code_of({"--chunk-rows", "16"}, &config), -1);
  EXPECT_LE(config.compute_threads(), 2);
  ASSERT_EQ(exit_code_of({"--threads", "5"}, &config), -1);
  EXPECT_EQ(config.compute_threads(), 4);
}

TEST(Phase2Options, AcceptedValues) {
  phase2::Config config;
  ASSERT_EQ(exit_code_of({"--workload", "real", "--chunk-rows", "1K", "--hidden", "64", "--threads", "3", "--mode",
                          "overlap", "--jitter", "0.5"},
                         &config),
            -1);
  EXPECT_EQ(config.chunk_rows, 1024);
  EXPECT_EQ(config.compute_threads(), 2);
  EXPECT_EQ(config.modes(), (std::vector<ob::Mode>{ob::Mode::kOverlap}));
}

TEST(Phase2Options, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--chunks", "0"},
      {"--chunks", "-1"},
      {"--chunks", "x"},
      {"--compute-ms", "-1"},
      {"--compute-ms", "nan"},
      {"--comm-ms", "inf"},
      {"--jitter", "1.5"},
      {"--jitter", "-0.1"},
      {"--threads", "-2"},
      {"--mode", "fast"},
      {"--workload", "fake"},
      {"--hidden", "0"},
      {"--chunk-rows", "0"},
      {"--virtual-ranks", "0"},
      {"--iters", "0"},
      {"--csv", "/no/such/dir/x.csv"},
      {"--workload", "real", "--hidden", "60000", "--virtual-ranks", "4000"},  // sums no longer exact in fp32
      {"--workload", "real", "--chunk-rows", "16M", "--hidden", "65536"},  // more memory than the machine
  };
  for (const auto& args : bad) {
    EXPECT_EQ(exit_code_of(args), ob::kExitUsage) << ob::testing::joined(args);
  }
}
