// Phase 4's points for a comparison in one process (issue 49): several --sweep options multiply into every
// combination (the first outermost), a shape sweep trains several configurations, --order-seed shuffles the points
// reproducibly, and a calibration per shape serves --plan auto.
#include <gtest/gtest.h>

#include <set>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/sweep_options.hpp"
#include "phase4_chunked_nccl/driver/transport.hpp"
#include "tests/phase4/phase4_options_support.hpp"

using phase4::testing::exit_code_of;

TEST(Phase4SweepPoints, SeveralSweepsMultiplyTheFirstOutermost) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sweep", "shape=4096x16x512,1024x32x256", "--sweep", "sync=nccl,ce,sharded"}, &config), -1);
  const auto points = config.sweep_points();
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].hidden, 4096);
  EXPECT_EQ(points[0].sync, "nccl");
  EXPECT_EQ(points[2].sync, "sharded");
  EXPECT_EQ(points[3].hidden, 1024);
  EXPECT_EQ(points[3].layers, 32);
  EXPECT_EQ(points[3].batch, 256);
  EXPECT_EQ(points[4].sync, "ce");
  EXPECT_EQ(points[4].point_label(), "shape=1024x32x256, bucket-mb=25, sync=ce");
  EXPECT_EQ(points[0].point_label(), "shape=4096x16x512, bucket-mb=25");
  // without --order-seed they run as listed
  EXPECT_EQ(config.run_order()[4].point_label(), points[4].point_label());
}

TEST(Phase4SweepPoints, AnOrderSeedShufflesThePointsReproducibly) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sweep", "shape=4096x16x512,1024x32x256,2048x24x1024", "--sweep", "sync=nccl,ce",
                          "--order-seed", "7"},
                         &config),
            -1);
  const auto order = config.run_order();
  std::set<std::string> labels, listed;
  for (const auto& point : order) labels.insert(point.point_label());
  for (const auto& point : config.sweep_points()) listed.insert(point.point_label());
  EXPECT_EQ(labels, listed);  // every point once
  std::vector<std::string> first, again, other;
  for (const auto& point : order) first.push_back(point.point_label());
  for (const auto& point : config.run_order()) again.push_back(point.point_label());
  EXPECT_EQ(first, again);
  ASSERT_EQ(exit_code_of({"--sweep", "shape=4096x16x512,1024x32x256,2048x24x1024", "--sweep", "sync=nccl,ce",
                          "--order-seed", "8"},
                         &config),
            -1);
  for (const auto& point : config.run_order()) other.push_back(point.point_label());
  EXPECT_NE(first, other);
  EXPECT_EQ(exit_code_of({"--order-seed", "-1"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--order-seed", "4294967296"}), ob::kExitUsage);
}

TEST(Phase4SweepPoints, ShapesAreCheckedAsTheirOptionsAre) {
  for (const std::string bad :
       {"shape=4096x16", "shape=4096x16x0", "shape=4096x5000x512", "shape=65537x1x1", "shape=4096x16x512.5",
        "shape=axbxc", "shape=4096x16x600000", "shape=4096x16x512,4096x16x512"}) {
    EXPECT_EQ(exit_code_of({"--sweep", bad}), ob::kExitUsage) << bad;
  }
  EXPECT_EQ(phase4::parse_shape("4096x16x512")->layers, 16);
  EXPECT_FALSE(phase4::parse_shape("4096x16x512x1").has_value());
}

TEST(Phase4SweepPoints, WhatASweepOfShapesRefuses) {
  // the same option swept twice, a shape sweep with --model, a calibration measured over several shapes
  EXPECT_EQ(exit_code_of({"--sweep", "sync=nccl", "--sweep", "sync=ce"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--sweep", "shape=4096x16x512"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--calibrate", "--sweep", "shape=4096x16x512,1024x32x256"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--sweep", "shape=4096x16x512,1024x32x256"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sweep", "shape=4096x16x512,1024x32x256", "--sweep", "plan=auto,25"}), ob::kExitUsage);
  // one shape may calibrate
  EXPECT_EQ(exit_code_of({"--calibrate", "--sweep", "shape=1024x32x256"}), -1);
}

TEST(Phase4SweepPoints, APlannedPointIsNotMultipliedByAStrategySweep) {
  // every strategy at --bucket-mb's caps (plan=caps) and the planner's plan once: its strategy is the planner's
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sweep", "sync=nccl,ce,sharded", "--sweep", "plan=caps,auto", "--plan-syncs", "nccl,ce"},
                         &config),
            -1);
  const auto points = config.sweep_points();
  std::vector<std::string> labels;
  for (const auto& point : points) labels.push_back(point.point_label());
  EXPECT_EQ(
      labels,
      (std::vector<std::string>{"bucket-mb=25", "plan=auto", "bucket-mb=25, sync=ce", "bucket-mb=25, sync=sharded"}));
  EXPECT_EQ(points[0].first_bucket_mb, 1.0);  // caps: the default plan, its 1 MiB first bucket kept
  EXPECT_EQ(points[1].plan_mode, phase4::PlanMode::kAuto);
}

TEST(Phase4SweepPoints, EverySweepIsOneOptionValueEach) {
  // "--sweep a b" is not two sweeps: one value per --sweep
  EXPECT_EQ(exit_code_of({"--sweep", "sync=nccl,ce", "chunks=1,2"}), ob::kExitUsage);
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sweep", "sync=nccl,ce", "--sweep", "chunks=1,2"}, &config), -1);
  EXPECT_EQ(config.sweeps.size(), 2u);
}

TEST(Phase4EmulatedNodes, ConsecutiveRanksFormEachNodeAndTheNodesMustDivideTheRanks) {
  EXPECT_EQ(phase4::node_of_rank(0, 4, 2), 0);
  EXPECT_EQ(phase4::node_of_rank(1, 4, 2), 0);
  EXPECT_EQ(phase4::node_of_rank(2, 4, 2), 1);
  EXPECT_EQ(phase4::node_of_rank(3, 4, 1), 0);
  EXPECT_EQ(phase4::emulated_host_id(1), "overlap-bench-node-1");
  EXPECT_THROW(phase4::node_of_rank(0, 4, 3), ob::UsageError);
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--emulate-nodes", "2"}, &config), -1);
  EXPECT_EQ(config.emulate_nodes, 2);
  EXPECT_EQ(exit_code_of({"--emulate-nodes", "0"}), ob::kExitUsage);
}

TEST(Phase4EmulatedNodes, AFasterSocketNetworkIsAskedOfNcclWhereTheRanksTalkOverOne) {
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(phase4::socket_environment(0, 0), Env{});
  EXPECT_EQ(phase4::socket_environment(4, 16), (Env{{"NCCL_SOCKET_NTHREADS", "4"}, {"NCCL_NSOCKS_PERTHREAD", "16"}}));
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--emulate-nodes", "2", "--socket-threads", "4", "--socks-per-thread", "16"}, &config), -1);
  EXPECT_EQ(config.socket_threads * config.socks_per_thread, 64);
  EXPECT_EQ(exit_code_of({"--transport", "socket", "--socks-per-thread", "8"}), -1);
  // No network between the ranks, more than NCCL's 64 sockets, or out of range: refused before any work.
  EXPECT_EQ(exit_code_of({"--socket-threads", "4"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--emulate-nodes", "2", "--socket-threads", "8", "--socks-per-thread", "16"}),
            ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--emulate-nodes", "2", "--socket-threads", "17"}), ob::kExitUsage);
}
