// The synthetic pipeline follows the model T = c + (n - 1) max(c, m) + m. Sleeps are never shorter than asked, and a
// loaded machine only lengthens them (seen: 128 ms for a 110 ms model on a busy 2-core machine), so the times are
// checked from below tightly, from above loosely (twice the model), and for their order: how close a run comes to
// the model is a benchmark's question, not a unit test's.
#include <gtest/gtest.h>

#include "common/metrics.hpp"
#include "common/stats.hpp"
#include "phase2_omp_overlap/runner.hpp"

namespace {

phase2::Config synthetic(int chunks, double c, double m) {
  phase2::Config config;
  config.chunks = chunks;
  config.compute_ms = c;
  config.comm_ms = m;
  config.common.iters = 3;
  config.common.warmup = 1;
  config.mode = "all";
  return config;
}

const ob::Stats* stats_of(const phase2::Result& result, const std::string& mode) {
  for (const auto& row : result.rows) {
    if (ob::mode_name(row.mode) == mode) return &row.time_ms;
  }
  ADD_FAILURE() << "no row " << mode;
  return nullptr;
}
double p50_of(const phase2::Result& result, const std::string& mode) {
  const auto* stats = stats_of(result, mode);
  return stats ? stats->p50 : 0;
}
// The fastest iteration: what load only lengthens, so the figure held from above and in order (round 6: the median
// of an overlapped run passed the sequential one's beside other builds on a 2-core machine).
double fastest_of(const phase2::Result& result, const std::string& mode) {
  const auto* stats = stats_of(result, mode);
  return stats ? stats->min : 0;
}

}  // namespace

TEST(Phase2Synthetic, ComputeBoundFollowsTheModel) {
  const auto result = phase2::run(synthetic(5, 20, 10), nullptr);
  const double seq = p50_of(result, "seq"), overlap = fastest_of(result, "overlap");
  EXPECT_GE(fastest_of(result, "seq"), 150.0 * 0.98);
  EXPECT_LE(fastest_of(result, "seq"), 150.0 * 2);
  EXPECT_GE(overlap, 110.0 * 0.98);
  EXPECT_LE(overlap, 110.0 * 2);
  EXPECT_LT(overlap, seq);
  EXPECT_DOUBLE_EQ(p50_of(result, "bound"), 110.0);
  EXPECT_GE(p50_of(result, "ideal"), 100.0 * 0.98);
}

TEST(Phase2Synthetic, CommunicationBoundFollowsTheModel) {
  const auto result = phase2::run(synthetic(5, 10, 20), nullptr);
  EXPECT_DOUBLE_EQ(p50_of(result, "bound"), ob::equal_chunk_pipeline_ms(5, 10, 20));
  const double seq = p50_of(result, "seq"), overlap = fastest_of(result, "overlap");
  EXPECT_GE(overlap, 110.0 * 0.98);
  EXPECT_LE(overlap, 110.0 * 2);
  EXPECT_GE(fastest_of(result, "seq"), 150.0 * 0.98);
  EXPECT_LT(overlap, seq);
}

TEST(Phase2Synthetic, OneChunkCannotOverlap) {
  const auto result = phase2::run(synthetic(1, 20, 10), nullptr);
  const double ratio = p50_of(result, "overlap") / p50_of(result, "seq");
  EXPECT_GT(ratio, 0.9);
  // A hand-off to the comm thread can wait for a core on a loaded 2-core machine (the median reached 1.6 beside two
  // busy loops): the fastest overlapped iteration, which load only lengthens, holds the schedule's own cost.
  EXPECT_LT(fastest_of(result, "overlap") / p50_of(result, "seq"), 1.6);
  EXPECT_DOUBLE_EQ(p50_of(result, "bound"), 30.0);
}

TEST(Phase2Synthetic, TimelineShowsOverlapOnlyWhenOverlapped) {
  auto config = synthetic(4, 5, 5);
  const auto result = phase2::run(config, nullptr);
  auto overlapping_pairs = [&](const std::string& mode) {
    int pairs = 0;
    for (const auto& a : result.events) {
      if (a.lane.rfind(mode + ":", 0) != 0 || a.name != "comm") continue;
      for (const auto& b : result.events) {
        if (b.lane.rfind(mode + ":", 0) == 0 && b.name == "compute" && ob::overlaps_in_time(a, b)) ++pairs;
      }
    }
    return pairs;
  };
  EXPECT_GT(overlapping_pairs("overlap"), 0);
  EXPECT_EQ(overlapping_pairs("seq"), 0);
  // Every timed task is in the timeline: 4 modes' tasks per iteration.
  EXPECT_EQ(result.events.size(), static_cast<std::size_t>(3 * (8 + 8 + 4 + 4)));
}

TEST(Phase2Synthetic, JitterIsSeededAndBounded) {
  auto config = synthetic(3, 10, 10);
  config.jitter = 0.5;
  phase2::SyntheticWorkload a(config), b(config);
  bool varied = false;
  for (int chunk = 0; chunk < 20; ++chunk) {
    const double d = a.duration_ms(0, 1, chunk);
    EXPECT_DOUBLE_EQ(d, b.duration_ms(0, 1, chunk));
    EXPECT_GE(d, 5.0);
    EXPECT_LE(d, 15.0);
    varied = varied || d != 10.0;
  }
  EXPECT_TRUE(varied);
}
