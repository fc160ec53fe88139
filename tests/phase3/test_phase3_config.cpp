#include <gtest/gtest.h>
#include <mpi.h>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase3_mpi_cuda/config.hpp"
#include "phase3_mpi_cuda/runner.hpp"
#include "tests/support/test_support.hpp"

namespace {
int exit_code_of(std::vector<std::string> args) {
  phase3::Config config;
  return ob::testing::exit_code_of(
      "phase3_mpi_cuda", std::move(args), [&](CLI::App& app) { phase3::add_options(app, config); },
      [&](const CLI::App&) {
        phase3::validate(config);
        ob::resolve_output_paths("phase3", config.common);
      });
}
}  // namespace

TEST(Phase3Ranges, ShardsCoverTheBatchExactlyOnceEvenWhenUneven) {
  for (int rows : {0, 1, 7, 1000, 1001}) {
    for (int ranks : {1, 2, 3, 8}) {
      int next = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto range = phase3::shard(rows, r, ranks);
        EXPECT_EQ(range.begin, next);
        EXPECT_GE(range.size(), rows / ranks);
        EXPECT_LE(range.size(), rows / ranks + 1);
        next = range.end;
      }
      EXPECT_EQ(next, rows);
    }
  }
  // More chunks than rows: some chunks are empty, none overlaps.
  int covered = 0;
  for (int k = 0; k < 10; ++k) covered += phase3::chunk_rows(4, k, 10).size();
  EXPECT_EQ(covered, 4);
}

TEST(Phase3Options, ModesAlwaysEndWithComputeAndComm) {
  phase3::Config config;
  EXPECT_EQ(config.modes(),
            (std::vector<ob::Mode>{ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, phase3::kThread,
                                   phase3::kNonblocking, phase3::kProgress}));
  config.strategy = "thread";
  EXPECT_EQ(config.modes(), (std::vector<ob::Mode>{ob::Mode::kCompute, ob::Mode::kComm, phase3::kThread}));
  config.compute = "busy";  // the comm-only run sizes the busy loop: it runs first
  EXPECT_EQ(config.modes(), (std::vector<ob::Mode>{ob::Mode::kComm, ob::Mode::kCompute, phase3::kThread}));
}

TEST(Phase3Options, GradientSweepSetsTheColumnsOfW) {
  phase3::Config config;
  config.in = 512;
  config.grad_mb = {1, 4, 16};
  const auto points = config.points();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].out, 512);
  EXPECT_EQ(points[2].out, 8192);
  EXPECT_EQ(points[2].grad_mb, std::vector<double>{16});
  EXPECT_EQ(exit_code_of({"--grad-mb", "1,4,16", "--compute", "busy", "--probes", "10"}), -1);
  EXPECT_EQ(exit_code_of({"--grad-mb", "0.001"}), 2);  // 262.144 floats: not whole rows
  EXPECT_EQ(exit_code_of({"--batch", "auto", "--strategy", "progress", "--backoff-us", "0"}), -1);
}

TEST(Phase3Options, RowsForTimeFollowsTheLineThroughTwoMeasurements) {
  EXPECT_EQ(phase3::rows_for_time(3.0, 100, 1.0, 200, 2.0), 300);
  EXPECT_EQ(phase3::rows_for_time(1.5, 100, 0.5, 200, 1.0), 300);  // the line starts at 0 here as well
  EXPECT_EQ(phase3::rows_for_time(4.0, 100, 2.0, 200, 1.0), 800);  // falling: proportional to the larger batch
  EXPECT_GT(phase3::clock_resolution_ms(), 0.0);
  EXPECT_LT(phase3::clock_resolution_ms(), 0.01);
}

TEST(Phase3Options, DefaultsAndMoreChunksThanRowsParse) {  // bad values: tests/python/test_bad_input.py
  EXPECT_EQ(exit_code_of({}), -1);
  EXPECT_EQ(exit_code_of({"--chunks", "100", "--in", "10"}), -1);
  EXPECT_EQ(exit_code_of({"--inject-fault", "1:20:hang", "--timeout-s", "30"}), -1);
  EXPECT_EQ(exit_code_of({"--inject-fault", "1:start-up:exit"}), -1);
}

TEST(Phase3Options, ShareGpuIsAskedForWithGpuComputeOnly) {  // the runtime refusal: tests/python/test_phase3_cli.py
  EXPECT_EQ(exit_code_of({"--share-gpu"}), -1);
  EXPECT_EQ(exit_code_of({"--share-gpu", "--device", "gpu"}), -1);
  EXPECT_EQ(exit_code_of({"--share-gpu", "--device", "cpu"}), 2);
  EXPECT_EQ(exit_code_of({"--share-gpu", "--compute", "busy"}), 2);
}

TEST(Phase3Options, CudaAwareUnderOpenMpi4TakesBlockingStrategiesOnly) {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  EXPECT_EQ(exit_code_of({"--cuda-aware"}), 2);  // --strategy all holds nonblocking and progress
  EXPECT_EQ(exit_code_of({"--cuda-aware", "--strategy", "nonblocking"}), 2);
  EXPECT_EQ(exit_code_of({"--cuda-aware", "--strategy", "progress"}), 2);
#endif
  EXPECT_EQ(exit_code_of({"--cuda-aware", "--strategy", "seq"}), -1);
  EXPECT_EQ(exit_code_of({"--cuda-aware", "--strategy", "thread"}), -1);
}
