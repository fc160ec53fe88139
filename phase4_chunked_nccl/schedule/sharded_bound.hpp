// The sharded schedule's lower bound from its measured parts (schedule/sharded.cu runs the schedule): per forward
// layer l, the previous step's update of its slices (`update_ms`, compute stream), then its all-gather
// (`gather_ms`, communication stream, one after another in forward order), then its forward (`layer_ms`), which
// waits for the gather. The first `prefetch` layers (0: all) are updated and gathered before the first forward
// layer; layer l + prefetch just before forward layer l. `forward_rest_ms` (the loss) follows the last layer; then
// the backward pipeline of ob::pipeline_bound_ms() with the per-bucket reductions (`bucket_ms`) queued behind the
// gathers. Nothing follows the last reduction (the update is the next step's). Never below T_comp nor T_comm, as
// ob::schedule_bound_ms().
#pragma once

#include <vector>

namespace phase4 {

struct ShardedStep {
  std::vector<double> layer_ms, gather_ms, update_ms;  // per forward layer
  int prefetch = 0;
  double forward_rest_ms = 0;
  std::vector<double> backward_ms, bucket_ms;
  std::vector<int> ready_after;
};

double sharded_bound_ms(const ShardedStep& step, double t_comp, double t_comm);

// The forward of that schedule alone (updates, gathers, layers, the rest): the compute and communication clocks at
// its end, from 0. The planner's sharded model starts the backward pipeline there.
void sharded_forward(const ShardedStep& step, double& compute_end, double& comm_end);

}  // namespace phase4
