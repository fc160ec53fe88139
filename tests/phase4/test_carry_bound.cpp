// The carry schedule's bound (its row's, schedule/carry.cpp) on hand-made steps whose critical paths are worked out,
// read as the driver reads it: through the row, from the step's common parts and the schedule's own by name; and the
// rows of the strategies it drives.
#include <gtest/gtest.h>

#include <stdexcept>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace {

// Forward layers `layers` (layer 1 first), the loss 0.5; backward steps {2, 2} (layer 2 first); the update 1; buckets
// of `bucket_ms` ready after `ready_after`.
phase4::MeasuredParts step(std::vector<double> bucket_ms, std::vector<int> ready_after,
                           std::vector<double> layers = {2, 2}) {
  phase4::MeasuredParts p;
  p.forward_ms = ob::sum_ms(layers) + 0.5;
  p.layer_ms = std::move(layers);
  p.backward_ms = {2, 2};
  p.update_ms = 1;
  p.bucket_ms = std::move(bucket_ms);
  p.ready_after = std::move(ready_after);
  p.t_comp = p.forward_ms + 4 + 1;  // the tasks' sum: no overhead
  p.t_comm = ob::sum_ms(p.bucket_ms);
  return p;
}

double bound(phase4::MeasuredParts p, int carry, double t_comp = 0) {
  if (t_comp > 0) p.t_comp = t_comp;
  phase4::SyncSpec sync;
  sync.knobs["carry"] = carry;
  return phase4::schedule_row("carry").bound(p, sync);
}

}  // namespace

TEST(CarryBound, CarriedBucketsGateTheForwardLayersThatNeedThem) {
  // Buckets {1, 3}: layer 2's (ready after step 0), layer 1's (after step 1). Carrying layer 1: its bucket 0..3, so
  // layer 1 runs 3..5, layer 2 (its bucket reduced last step) 5..7, the loss to 7.5; backward 7.5..9.5 and 9.5..11.5,
  // bucket 0 at 9.5..10.5 behind it; the update to 12.5. Carrying both: bucket 1 0..3, bucket 0 3..4: the same.
  const auto p = step({1, 3}, {0, 1});
  EXPECT_DOUBLE_EQ(bound(p, 1), 12.5);
  EXPECT_DOUBLE_EQ(bound(p, 0), 12.5);  // 0: half the layers, rounded up
  EXPECT_DOUBLE_EQ(bound(p, 2), 12.5);
  EXPECT_DOUBLE_EQ(bound(p, 9), 12.5);  // at most every layer
  EXPECT_DOUBLE_EQ(bound(p, 1, 13), 13);  // never below T_comp
}

TEST(CarryBound, CarryingMoreHidesTheReductionsThatOutlastTheBackward) {
  // Forward layers {4, 4}, buckets {6, 1}. Carrying layer 1's bucket (0..1): layers 1..5 and 5..9, the loss to 9.5,
  // backward 9.5..13.5, layer 2's bucket 11.5..17.5 ends the pipeline: 18.5 with the update. Carrying both: bucket 1
  // 0..1, bucket 0 1..7; layer 1 1..5, layer 2 waits to 7, 7..11, the loss to 11.5, backward to 15.5: 16.5.
  EXPECT_DOUBLE_EQ(bound(step({6, 1}, {0, 1}, {4, 4}), 1), 18.5);
  EXPECT_DOUBLE_EQ(bound(step({6, 1}, {0, 1}, {4, 4}), 2), 16.5);
}

TEST(CarryBound, ABucketSpanningLayersGatesEachOfThem) {
  // One 3 ms bucket holding both layers, carried: both wait for it (0..3): 3..5, 5..7, loss 7.5, backward 11.5, 12.5.
  EXPECT_DOUBLE_EQ(bound(step({3}, {1}), 1), 12.5);
  auto unequal = step({3}, {1});
  unequal.ready_after.push_back(1);
  EXPECT_THROW(bound(unequal, 1), std::invalid_argument);
}

TEST(CarryBound, ItsStrategiesAreTheAllReducesCarriedOneMicroStepEach) {
  const auto& carry = phase4::schedule_row("carry");
  EXPECT_TRUE(carry.parts.empty());
  EXPECT_TRUE(carry.planned && !carry.whole_tensors && !carry.forward);
  EXPECT_EQ(phase4::sync_names("carry"), (std::vector<std::string>{"ce-carry", "nccl-carry", "nccl-sym-carry"}));
  for (const auto& name : phase4::sync_names("carry")) {
    const auto& row = phase4::sync_row(name);
    const auto& base = phase4::sync_row(name.substr(0, name.size() - 6));
    EXPECT_FALSE(row.accumulation || row.exact_reference) << name;
    EXPECT_EQ(row.peer_access, base.peer_access) << name;
    EXPECT_EQ(row.cta_policy, base.cta_policy) << name;
    EXPECT_EQ(&phase4::schedule_of(name), &carry);
  }
  EXPECT_EQ(phase4::reference_sync(), "nccl");
}
