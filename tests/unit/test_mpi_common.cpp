// Cross-rank pieces of common/, run under mpirun with 2 and 3 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "common/errors.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/stats.hpp"
#include "common/timeline.hpp"
#include "tests/support/test_support.hpp"

TEST(RankReduce, SlowestRankPerIteration) {
  const int rank = ob::testing::world_rank(), size = ob::testing::world_size();
  // Iteration 0 is slowest on the last rank, iteration 1 on rank 0.
  const std::vector<double> mine = {1.0 + rank, 10.0 - rank};
  const auto max = ob::max_across_ranks(mine, MPI_COMM_WORLD);
  EXPECT_DOUBLE_EQ(max[0], static_cast<double>(size));
  EXPECT_DOUBLE_EQ(max[1], 10.0);
  const auto sum = ob::sum_across_ranks(mine, MPI_COMM_WORLD);
  EXPECT_DOUBLE_EQ(sum[0], size + size * (size - 1) / 2.0);
}

TEST(RankReduce, SlowestAndFastestRanksMedians) {
  const int rank = ob::testing::world_rank(), size = ob::testing::world_size();
  // Rank r's samples {r, r + 1, r + 2}: its median r + 1. An empty rank is left out; none at all is NaN.
  const std::vector<double> mine = {1.0 * rank, rank + 1.0, rank + 2.0};
  EXPECT_DOUBLE_EQ(ob::slowest_median(mine, MPI_COMM_WORLD), size);
  EXPECT_DOUBLE_EQ(ob::fastest_median(mine, MPI_COMM_WORLD), 1.0);
  EXPECT_DOUBLE_EQ(ob::fastest_median(rank == 0 ? std::vector<double>{} : mine, MPI_COMM_WORLD), 2.0);
  EXPECT_TRUE(std::isnan(ob::fastest_median({}, MPI_COMM_WORLD)));
}

TEST(RankReduce, CurrentRankIsKnownUnderMpi) { EXPECT_EQ(ob::current_rank(), ob::testing::world_rank()); }

TEST(Timeline, GatherMergesEveryRanksEventsOnRoot) {
  const int rank = ob::testing::world_rank(), size = ob::testing::world_size();
  std::vector<ob::TimelineEvent> mine;
  for (int i = 0; i <= rank; ++i) mine.push_back({rank, "comm", "allreduce, \"odd\" name", i, i, 1.0 * i, 2.0 * i + 1});
  const auto merged = ob::gather_timeline(mine, MPI_COMM_WORLD);
  if (rank != 0) {
    EXPECT_TRUE(merged.empty());
    return;
  }
  ASSERT_EQ(static_cast<int>(merged.size()), size * (size + 1) / 2);
  EXPECT_EQ(merged.back().rank, size - 1);
  EXPECT_EQ(merged.back().name, "allreduce, \"odd\" name");
  EXPECT_DOUBLE_EQ(merged.back().end_us, 2.0 * (size - 1) + 1);
}

TEST(MpiCheck, DecodesTheErrorAndNamesTheRank) {
  try {
    MPI_CHECK(MPI_Send(nullptr, -1, MPI_INT, 0, 0, MPI_COMM_WORLD));  // negative count: MPI_ERR_COUNT
    FAIL() << "expected a CallFailure";
  } catch (const ob::CallFailure& error) {
    EXPECT_EQ(error.rank(), ob::testing::world_rank());
    EXPECT_NE(error.call().find("MPI_Send"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("(rank " + std::to_string(ob::testing::world_rank()) + ")"),
              std::string::npos)
        << error.what();
    EXPECT_NE(error.message().find("count"), std::string::npos) << error.message();  // MPI_Error_string's text
  }
}

// The GPU of a rank in the two layouts sites use, and the check that stops two ranks sharing one (all ranks of this
// test run on one node).
TEST(GpuBinding, EachRankGetsItsOwnGpuInBothLayoutsAndSharingIsNamed) {
  // Every task sees the node's 4 GPUs: local rank r takes device r. Each task sees only its own: device 0.
  for (int local = 0; local < 4; ++local) {
    EXPECT_EQ(ob::gpu_for_rank(local, 4), local);
    EXPECT_EQ(ob::gpu_for_rank(local, 1), 0);
  }
  EXPECT_EQ(ob::gpu_for_rank(5, 4), 1);  // more ranks than GPUs: they wrap (and then share, named below)
  EXPECT_EQ(ob::gpu_for_rank(0, 0), -1);  // no GPU
  EXPECT_EQ(ob::shared_gpu({"0000:00:06.0", "0000:00:07.0"}), "");
  EXPECT_EQ(ob::shared_gpu({"0000:00:06.0", "0000:00:07.0", "0000:00:06.0"}),
            "local ranks 0 and 2 share GPU 0000:00:06.0");
  // The ids travel over the node's ranks in local rank order.
  const int rank = ob::testing::world_rank(), size = ob::testing::world_size();
  const auto ids = ob::gather_on_node("gpu-" + std::to_string(rank % 2), MPI_COMM_WORLD);
  ASSERT_EQ(static_cast<int>(ids.size()), size);
  for (int r = 0; r < size; ++r) EXPECT_EQ(ids[r], "gpu-" + std::to_string(r % 2));
  EXPECT_EQ(ob::shared_gpu(ids).empty(), size < 3);
}
