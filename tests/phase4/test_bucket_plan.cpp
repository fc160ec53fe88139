// The bucket planner covers every gradient element exactly once, in backward order, with correct ready steps.
#include <gtest/gtest.h>

#include "phase4_chunked_nccl/core/bucket_plan.hpp"

namespace {
constexpr double kElemMb = 4.0 / (1 << 20);  // one fp32 element in MiB
}

TEST(BucketPlan, DdpStyleCapsWithASmallFirstBucket) {
  // 16 layers of 4096^2 fp32 = 64 MiB each, 1 GiB in all: first bucket 1 MiB, then 25 MiB buckets.
  const auto plan = phase4::plan_by_size(16, 4096, 25, 1);
  phase4::validate_plan(plan, 16, 4096);
  EXPECT_EQ(plan.buckets.front().size(), (1u << 20) / 4);
  EXPECT_EQ(plan.buckets[1].size(), 25u * (1 << 20) / 4);
  EXPECT_EQ(plan.buckets.size(), 1 + (1024 - 1 + 24) / 25);  // 1 MiB + ceil(1023 / 25) buckets
  EXPECT_EQ(plan.buckets.front().ready_after, 0);  // inside layer L: ready after the first step
  EXPECT_EQ(plan.buckets.back().ready_after, 15);
  // A 25 MiB bucket from 51 to 76 MiB spans layers L and L-1: ready only after step 1.
  EXPECT_EQ(plan.buckets[3].begin * 4 / (1 << 20), 51u);
  EXPECT_EQ(plan.buckets[3].ready_after, 1);
}

TEST(BucketPlan, LayersSpanBucketsAndBucketsSpanLayers) {
  const auto plan = phase4::plan_by_size(3, 10, 35 * kElemMb, 35 * kElemMb);  // 100-element layers, 35-element buckets
  phase4::validate_plan(plan, 3, 10);
  ASSERT_EQ(plan.buckets.size(), 9u);  // 8 x 35 + 20
  const std::vector<int> ready = {0, 0, 1, 1, 1, 2, 2, 2, 2};
  for (std::size_t b = 0; b < ready.size(); ++b) EXPECT_EQ(plan.buckets[b].ready_after, ready[b]) << b;
  EXPECT_EQ(plan.buckets.back().size(), 20u);
}

TEST(BucketPlan, EdgeCases) {
  // One layer.
  auto plan = phase4::plan_by_size(1, 8, 1, 1);
  phase4::validate_plan(plan, 1, 8);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].size(), 64u);
  // A bucket larger than the model.
  plan = phase4::plan_by_size(4, 16, 1000, 1000);
  phase4::validate_plan(plan, 4, 16);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].ready_after, 3);
  // A first bucket smaller than one element still holds one.
  plan = phase4::plan_by_size(2, 4, 8 * kElemMb, 1e-9);
  phase4::validate_plan(plan, 2, 4);
  EXPECT_EQ(plan.buckets[0].size(), 1u);
  EXPECT_EQ(plan.buckets[1].size(), 8u);
  // More chunks than elements: one element each.
  plan = phase4::plan_by_chunks(1, 3, 50);
  phase4::validate_plan(plan, 1, 3);
  EXPECT_EQ(plan.buckets.size(), 9u);
  EXPECT_THROW(phase4::plan_by_size(0, 4, 1, 1), std::invalid_argument);
  EXPECT_THROW(phase4::plan_by_size(2, 4, 0, 1), std::invalid_argument);
  EXPECT_THROW(phase4::plan_by_chunks(2, 4, 0), std::invalid_argument);
}

TEST(BucketPlan, EqualChunksDifferByAtMostOneElement) {
  for (int chunks : {5, 10, 20, 50}) {
    const auto plan = phase4::plan_by_chunks(16, 100, chunks);
    phase4::validate_plan(plan, 16, 100);
    ASSERT_EQ(plan.buckets.size(), static_cast<std::size_t>(chunks));
    std::uint64_t lo = plan.elements, hi = 0;
    for (const auto& b : plan.buckets) {
      lo = std::min(lo, b.size());
      hi = std::max(hi, b.size());
    }
    EXPECT_LE(hi - lo, 1u);
  }
}

TEST(BucketPlan, ValidatorCatchesGapsOverlapsAndWrongReadySteps) {
  auto plan = phase4::plan_by_chunks(2, 4, 4);
  auto broken = plan;
  broken.buckets[1].begin += 1;  // a gap
  EXPECT_THROW(phase4::validate_plan(broken, 2, 4), std::logic_error);
  broken = plan;
  broken.buckets[2].ready_after = 0;  // would launch before its layer is written
  EXPECT_THROW(phase4::validate_plan(broken, 2, 4), std::logic_error);
  broken = plan;
  broken.buckets.pop_back();  // the tail is never reduced
  EXPECT_THROW(phase4::validate_plan(broken, 2, 4), std::logic_error);
  EXPECT_NE(plan.describe().find("4 buckets"), std::string::npos);
}

TEST(BucketPlan, AlignedPlanMovesBoundariesUpToTheMultiple) {
  // 3 layers of 100 elements, 35-element buckets, aligned to 16: ends 48, 80, 112, 144, 176, 208, 256, 288, 300.
  const auto plan = phase4::plan_by_size(3, 10, 35 * kElemMb, 35 * kElemMb);
  const auto aligned = phase4::align_plan(plan, phase4::GradientLayout::equal(3, 10), 16);
  phase4::validate_plan(aligned, 3, 10);  // still every element once, ready steps following the new ends
  for (std::size_t b = 0; b + 1 < aligned.buckets.size(); ++b) EXPECT_EQ(aligned.buckets[b].end % 16, 0u) << b;
  EXPECT_EQ(aligned.buckets.back().end, 300u);  // the last bucket keeps the gradient's end
  EXPECT_EQ(aligned.buckets[1].end, 80u);
  EXPECT_EQ(aligned.buckets[1].ready_after, 0);
  EXPECT_EQ(aligned.buckets[2].ready_after, 1);  // 112 reaches into layer 2
  // A multiple larger than the buckets swallows some of them.
  const auto coarse = phase4::align_plan(plan, phase4::GradientLayout::equal(3, 10), 128);
  phase4::validate_plan(coarse, 3, 10);
  EXPECT_EQ(coarse.buckets.size(), 3u);  // 128, 256, 300
  EXPECT_THROW(phase4::align_plan(plan, phase4::GradientLayout::equal(3, 10), 0), std::invalid_argument);
}

TEST(BucketPlan, StepAlignedPlanTakesWholeSteps) {
  // Steps of 10, 1, 30 and 5 elements (ends 10, 11, 41, 46) and buckets ending at 4, 8, 25, 40, 46: each end moves up
  // to its step's end (10, 10, 41, 41, 46), the buckets that vanish are dropped: ends 10, 41, 46.
  const auto layout = phase4::GradientLayout::of_sizes({10, 1, 30, 5});
  const auto plan = phase4::plan_from_ends(layout, {4, 8, 25, 40, 46});
  const auto aligned = phase4::align_plan_to_steps(plan, layout);
  phase4::validate_plan(aligned, layout);
  ASSERT_EQ(aligned.buckets.size(), 3u);
  EXPECT_EQ(aligned.buckets[0].end, 10u);
  EXPECT_EQ(aligned.buckets[1].end, 41u);
  EXPECT_EQ(aligned.buckets[1].ready_after, 2);
  EXPECT_EQ(aligned.buckets[2].end, 46u);
  // Equal layers: the same plan as aligning to the layer's size.
  const auto equal = phase4::GradientLayout::equal(3, 10);
  const auto by_size = phase4::plan_by_size(3, 10, 35 * kElemMb, 35 * kElemMb);
  const auto a = phase4::align_plan_to_steps(by_size, equal), b = phase4::align_plan(by_size, equal, 100);
  ASSERT_EQ(a.buckets.size(), b.buckets.size());
  for (std::size_t i = 0; i < a.buckets.size(); ++i) EXPECT_EQ(a.buckets[i].end, b.buckets[i].end) << i;
}

TEST(BucketPlan, UnequalStepsAsATransformersTensors) {
  // Steps of 10, 1, 30 and 5 elements (a matrix, its bias, a wider matrix, a norm): a bucket is ready after the step
  // holding its last element, whatever the sizes.
  const auto layout = phase4::GradientLayout::of_sizes({10, 1, 30, 5});
  EXPECT_EQ(layout.elements(), 46u);
  EXPECT_EQ(layout.steps(), 4);
  EXPECT_EQ(layout.ready_step(10), 0);
  EXPECT_EQ(layout.ready_step(11), 1);
  EXPECT_EQ(layout.ready_step(12), 2);
  EXPECT_EQ(layout.ready_step(46), 3);
  const auto plan = phase4::plan_by_size(layout, 12 * kElemMb, 12 * kElemMb);
  phase4::validate_plan(plan, layout);
  const std::vector<int> ready = {2, 2, 2, 3};  // ends 12, 24, 36 (inside the 30), 46
  ASSERT_EQ(plan.buckets.size(), ready.size());
  for (std::size_t b = 0; b < ready.size(); ++b) EXPECT_EQ(plan.buckets[b].ready_after, ready[b]) << b;
  // The equal layout is phase 4's model: the same plans as the (layers, hidden) forms.
  const auto equal = phase4::GradientLayout::equal(3, 10);
  EXPECT_EQ(equal.ends, (std::vector<std::uint64_t>{100, 200, 300}));
  EXPECT_THROW(phase4::GradientLayout::of_sizes({4, 0, 2}), std::invalid_argument);
  EXPECT_THROW(phase4::GradientLayout::of_sizes({}), std::invalid_argument);
  // A plan of another gradient is refused.
  EXPECT_THROW(phase4::validate_plan(phase4::plan_by_chunks(phase4::GradientLayout::of_sizes({10, 36}), 3), layout),
               std::logic_error);
}

TEST(BucketPlan, DdpKeepsTensorsWholeAndClosesABucketOnceItHoldsItsCap) {
  // PyTorch's rule (as bench_ddp.py's ddp_buckets): steps of 10, 1, 30, 5 and 20 elements, a first cap of 8 elements
  // and then 12: [10] (>= 8), [1, 30] (>= 12), [5, 20].
  const auto layout = phase4::GradientLayout::of_sizes({10, 1, 30, 5, 20});
  const auto plan = phase4::plan_like_ddp(layout, 12 * kElemMb, 8 * kElemMb);
  phase4::validate_plan(plan, layout);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].end, 10u);
  EXPECT_EQ(plan.buckets[1].end, 41u);
  EXPECT_EQ(plan.buckets[2].end, 66u);
  // Phase 4's model: 64 MiB layers with a 25 MiB cap are one bucket each (the cap never cuts a layer).
  const auto mlp = phase4::plan_like_ddp(phase4::GradientLayout::equal(16, 4096), 25);
  EXPECT_EQ(mlp.buckets.size(), 16u);
  EXPECT_THROW(phase4::plan_like_ddp(layout, 0), std::invalid_argument);
}
