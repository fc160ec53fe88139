// The breakdown (METRICS.md, "Breakdown"): a mode's timed steps are marked at their start and end only; its parts and
// its timeline come from kBreakdownSteps further steps marked in detail (at_timed_pace: scaled by the timed steps'
// median over theirs), eager and replayed from a CUDA graph. Skips (exit 77) without a CUDA device.
#include <gtest/gtest.h>
#include <mpi.h>

#include <set>

#include "common/stats.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"
#include "tests/phase4/phase4_gpu_fixture.hpp"

using phase4_test::Phase4Gpu;

TEST_F(Phase4Gpu, ThePartsComeFromMarkedStepsAndSumToTheTimedStep) {
  for (const bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    auto config = small();
    config.graph = graph;
    config.common.iters = 8;
    phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
    const phase4::BucketPlan plan = trainer.adapt(config.plan());
    const phase4::ModeRun run = trainer.run(ob::Mode::kCompute, plan, false, ob::SteadyClock::now());
    EXPECT_EQ(run.iter_ms.size(), 8u);
    const auto marked = static_cast<std::size_t>(phase4::kBreakdownSteps);
    ASSERT_EQ(run.marked_ms.size(), marked);
    ASSERT_EQ(run.forward_ms.size(), marked);
    ASSERT_EQ(run.backward_total_ms.size(), marked);
    ASSERT_EQ(run.update_ms.size(), marked);
    // Forward, backward steps and update follow one another: they miss only the hand-over before the update. At the
    // timed steps' pace (at_timed_pace) they sum to the timed step as they do to the marked one.
    const phase4::ModeRun paced = phase4::at_timed_pace(run);
    const double scale = ob::summarize(run.iter_ms).p50 / ob::summarize(run.marked_ms).p50;
    EXPECT_GT(scale, 0.0);
    for (std::size_t k = 0; k < marked; ++k) {
      const double parts = run.forward_ms[k] + run.backward_total_ms[k] + run.update_ms[k];
      EXPECT_LE(parts, run.marked_ms[k] * (1 + 1e-6)) << "step " << k;
      EXPECT_GE(parts, 0.8 * run.marked_ms[k]) << "step " << k;
      const double at_pace = paced.forward_ms[k] + paced.backward_total_ms[k] + paced.update_ms[k];
      EXPECT_NEAR(at_pace, scale * parts, 1e-9 * parts) << "step " << k;
    }
    EXPECT_EQ(paced.iter_ms, run.iter_ms);
    std::set<int> drawn;
    int backward = 0;
    for (const auto& event : run.events) {
      drawn.insert(event.iter);
      backward += event.name == "backward";
    }
    EXPECT_EQ(drawn.size(), marked);  // the timeline draws the breakdown's steps
    EXPECT_EQ(backward, static_cast<int>(marked) * config.layers);
  }
}

// Fewer timed iterations than kBreakdownSteps: as many marked steps as timed ones.
TEST_F(Phase4Gpu, TheBreakdownTakesNoMoreStepsThanTheTimedOnes) {
  auto config = small();
  config.common.iters = 2;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const phase4::ModeRun run = trainer.run(ob::Mode::kComm, trainer.adapt(config.plan()), true, ob::SteadyClock::now());
  EXPECT_EQ(run.wrong, 0u);
  EXPECT_EQ(run.marked_ms.size(), 2u);
  for (const auto& bucket : run.bucket_ms) EXPECT_EQ(bucket.size(), 2u);
}
