// The sharded schedule's bound (its row's, schedule/sharded.cpp) on hand-made steps whose critical paths are worked
// out, read as the driver reads it: through the row, from the step's common parts and the schedule's own by name.
#include <gtest/gtest.h>

#include <stdexcept>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace {

// A step of forward layers `layers`, their updates and gathers, the forward's rest, and a backward pipeline.
phase4::MeasuredParts step(std::vector<double> layers, std::vector<double> updates, std::vector<double> gathers,
                           double rest, std::vector<double> backward, std::vector<double> buckets,
                           std::vector<int> ready_after) {
  phase4::MeasuredParts p;
  p.forward_ms = ob::sum_ms(layers) + ob::sum_ms(updates) + rest;
  p.layer_ms = std::move(layers);
  p.part_ms = {{"update", std::move(updates)}, {"gather", std::move(gathers)}};
  p.backward_ms = std::move(backward);
  p.bucket_ms = std::move(buckets);
  p.ready_after = std::move(ready_after);
  return p;
}

double bound(phase4::MeasuredParts p, double t_comp, double t_comm, int prefetch = 0) {
  p.t_comp = t_comp, p.t_comm = t_comm;
  phase4::SyncSpec sync;
  sync.knobs["prefetch"] = prefetch;
  return phase4::schedule_row("sharded").bound(p, sync);
}

}  // namespace

TEST(ShardedBound, UpdatesAndGathersGateTheForwardAndQueueBeforeTheReductions) {
  // Forward layers {2, 2}, updates {0.5, 0.5}, gathers {1, 3}: updates 0..0.5 and 0.5..1; gathers 0.5..1.5 and
  // 1.5..4.5; layers 1.5..3.5 and 4.5..6.5; the loss to 7. Backward {2, 2} from 7: the reductions (free from 4.5) run
  // 9..10 and 11..12. Tasks sum to 9.5 = T_comp: no overhead.
  const auto p = step({2, 2}, {0.5, 0.5}, {1, 3}, 0.5, {2, 2}, {1, 1}, {0, 1});
  EXPECT_DOUBLE_EQ(bound(p, 9.5, 6), 12);
  EXPECT_DOUBLE_EQ(bound(p, 10.5, 6), 12);  // its gaps (1 ms) may hide behind the reductions
  EXPECT_DOUBLE_EQ(bound(p, 12.5, 6), 12.5);  // never below T_comp
  EXPECT_DOUBLE_EQ(bound(p, 9.5, 14), 14);  // never below T_comm
  // free updates and gathers: the all-reduce schedule's bound
  const auto free = step({2, 2}, {0, 0}, {0, 0}, 0.5, {2, 2}, {1, 1}, {0, 1});
  EXPECT_DOUBLE_EQ(bound(free, 8.5, 0), ob::schedule_bound_ms(4.5, {2, 2}, {1, 1}, {0, 1}, 0, 8.5, 0));
  phase4::MeasuredParts as_all_reduce = free;
  as_all_reduce.t_comp = 8.5;
  EXPECT_DOUBLE_EQ(phase4::schedule_row("all-reduce").bound(as_all_reduce, {}), bound(free, 8.5, 0));
}

TEST(ShardedBound, APrefetchDepthHoldsGathersBackUntilTheForwardGetsThere) {
  // Layers {1, 1, 1}, gathers {1, 0.1, 3}, no update time. Unlimited: gathers 0..1, 1..1.1, 1.1..4.1; layers 1..2,
  // 2..3, 4.1..5.1; the backward 1 to 6.1, its reduction 0.5 to 6.6. Depth 1: the third gather is issued as the second
  // layer comes up (2): 2..5, the last layer 5..6, backward to 7, the reduction to 7.5.
  const auto p = step({1, 1, 1}, {0, 0, 0}, {1, 0.1, 3}, 0, {1}, {0.5}, {0});
  EXPECT_DOUBLE_EQ(bound(p, 4, 0), 6.6);
  EXPECT_DOUBLE_EQ(bound(p, 4, 0, 3), 6.6);  // as deep as the model: no limit
  EXPECT_DOUBLE_EQ(bound(p, 4, 0, 1), 7.5);
  auto short_gathers = p;
  short_gathers.part_ms["gather"] = {1, 1};
  EXPECT_THROW(bound(short_gathers, 4, 0), std::invalid_argument);
  auto no_gathers = p;
  no_gathers.part_ms.erase("gather");
  EXPECT_THROW(bound(no_gathers, 4, 0), std::invalid_argument);
}

TEST(ScheduleRows, EachSchedulesRowSaysWhatTheRestOfPhase4Needs) {
  EXPECT_EQ(phase4::schedule_names(), (std::vector<std::string>{"all-reduce", "carry", "sharded"}));
  const auto& sharded = phase4::schedule_row("sharded");
  ASSERT_EQ(sharded.parts.size(), 2u);
  EXPECT_TRUE(sharded.whole_tensors && sharded.forward && sharded.part("gather")->comm);
  EXPECT_FALSE(sharded.part("update")->comm);
  EXPECT_EQ(sharded.part("nothing"), nullptr);
  const auto& all_reduce = phase4::schedule_of("nccl");
  EXPECT_TRUE(all_reduce.parts.empty() && !all_reduce.whole_tensors && !all_reduce.forward);
  EXPECT_EQ(&phase4::schedule_of("sharded-ce"), &sharded);
  EXPECT_THROW(phase4::schedule_row("no-such"), std::invalid_argument);
}
