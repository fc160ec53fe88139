// The sharded schedule's bound (schedule/sharded_bound.hpp) on hand-made steps whose critical paths are worked out.
#include <gtest/gtest.h>

#include <stdexcept>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/schedule/sharded_bound.hpp"

TEST(ShardedBound, UpdatesAndGathersGateTheForwardAndQueueBeforeTheReductions) {
  // Forward layers {2, 2}, updates {0.5, 0.5}, gathers {1, 3}: updates 0..0.5 and 0.5..1; gathers 0.5..1.5 and
  // 1.5..4.5; layers 1.5..3.5 and 4.5..6.5; the loss to 7. Backward {2, 2} from 7: the reductions (free from 4.5) run
  // 9..10 and 11..12. Tasks sum to 9.5 = T_comp: no overhead.
  phase4::ShardedStep step;
  step.layer_ms = {2, 2};
  step.update_ms = {0.5, 0.5};
  step.gather_ms = {1, 3};
  step.forward_rest_ms = 0.5;
  step.backward_ms = {2, 2};
  step.bucket_ms = {1, 1};
  step.ready_after = {0, 1};
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 9.5, 6), 12);
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 10.5, 6), 12);  // its gaps (1 ms) may hide behind the reductions
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 12.5, 6), 12.5);  // never below T_comp
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 9.5, 14), 14);  // never below T_comm
  step.gather_ms = step.update_ms = {0, 0};  // free: the all-reduce schedule's bound
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 8.5, 0),
                   ob::schedule_bound_ms(4.5, {2, 2}, {1, 1}, {0, 1}, 0, 8.5, 0));
}

TEST(ShardedBound, APrefetchDepthHoldsGathersBackUntilTheForwardGetsThere) {
  // Layers {1, 1, 1}, gathers {1, 0.1, 3}, no update time. Unlimited: gathers 0..1, 1..1.1, 1.1..4.1; layers 1..2,
  // 2..3, 4.1..5.1; the backward 1 to 6.1, its reduction 0.5 to 6.6. Depth 1: the third gather is issued as the second
  // layer comes up (2): 2..5, the last layer 5..6, backward to 7, the reduction to 7.5.
  phase4::ShardedStep step;
  step.layer_ms = {1, 1, 1};
  step.update_ms = {0, 0, 0};
  step.gather_ms = {1, 0.1, 3};
  step.backward_ms = {1};
  step.bucket_ms = {0.5};
  step.ready_after = {0};
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 4, 0), 6.6);
  step.prefetch = 3;  // as deep as the model: no limit
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 4, 0), 6.6);
  step.prefetch = 1;
  EXPECT_DOUBLE_EQ(phase4::sharded_bound_ms(step, 4, 0), 7.5);
  step.gather_ms = {1, 1};
  EXPECT_THROW(phase4::sharded_bound_ms(step, 4, 0), std::invalid_argument);
}
