// The real workload: an OpenMP GEMM per chunk and an exact in-memory all-reduce among virtual ranks.
#include <gtest/gtest.h>

#include "phase2_omp_overlap/runner.hpp"
#include "phase2_omp_overlap/workload.hpp"

namespace {
phase2::Config real(int chunks, int rows, int hidden, int ranks) {
  phase2::Config config;
  config.workload = "real";
  config.chunks = chunks;
  config.chunk_rows = rows;
  config.hidden = hidden;
  config.virtual_ranks = ranks;
  config.common.iters = 2;
  config.common.warmup = 1;
  config.common.check = true;
  return config;
}
}  // namespace

TEST(Phase2Real, EveryModeIsExactForSeveralSizes) {
  for (const auto& config : {real(3, 7, 33, 3), real(1, 1, 1, 1), real(5, 16, 64, 8), real(2, 5, 17, 2)}) {
    const auto result = phase2::run(config, nullptr);
    EXPECT_EQ(result.wrong, 0u) << result.first_wrong;
    for (const auto& row : result.rows) {
      if (row.mode == ob::Mode::kSeq || row.mode == ob::Mode::kOverlap || row.mode == ob::Mode::kComm ||
          row.mode == ob::Mode::kCompute) {
        EXPECT_EQ(row.get("wrong"), "0") << row.mode;
      }
    }
  }
}

TEST(Phase2Real, AllReduceGivesTheExpectedSumOnEveryCopy) {
  auto config = real(2, 3, 8, 4);
  phase2::RealWorkload workload(config);
  for (int k = 0; k < 2; ++k) workload.compute(0, k, 0, 1);
  EXPECT_EQ(workload.check("compute").wrong, 0u);
  for (int k = 0; k < 2; ++k) workload.communicate(0, k);
  // Copy v held reference + v: the sum is 4 * reference + 6 on every copy.
  const auto& ref = workload.reference();
  for (int v = 0; v < 4; ++v) EXPECT_EQ(workload.copy(v)[5], 4 * ref[5] + 6) << v;
  EXPECT_EQ(workload.check("seq").wrong, 0u);
}

TEST(Phase2Real, CheckerCatchesACorruptedBuffer) {
  auto config = real(2, 3, 8, 4);
  phase2::RealWorkload workload(config);
  for (int k = 0; k < 2; ++k) {
    workload.compute(0, k, 0, 1);
    workload.communicate(0, k);
  }
  workload.copy(2)[7] += 1.0f;  // one element off by one on virtual rank 2
  const auto check = workload.check("overlap");
  EXPECT_EQ(check.wrong, 1u);
  EXPECT_NE(check.first.find("virtual rank 2, index 7: got"), std::string::npos) << check.first;
  // A chunk the all-reduce skipped is caught too (a few of its elements may equal the sum by coincidence).
  workload.prepare_comm_only();
  workload.communicate(0, 0);
  const auto skipped = workload.check("comm");
  EXPECT_GT(skipped.wrong, 3u * 8);
  EXPECT_LE(skipped.wrong, 4u * 3 * 8);
}

TEST(Phase2Real, ReportsComputeSlowdownAndOverlapMetrics) {
  const auto result = phase2::run(real(4, 8, 32, 4), nullptr);
  for (const auto& row : result.rows) {
    if (row.mode != ob::Mode::kOverlap) continue;
    EXPECT_FALSE(row.get("compute_slowdown").empty());
    EXPECT_FALSE(row.get("overlap_efficiency").empty());
    EXPECT_FALSE(row.get("speedup").empty());
  }
}
