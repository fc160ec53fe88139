#include "phase4_chunked_nccl/schedule/sharded_bound.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/metrics.hpp"

namespace phase4 {

void sharded_forward(const ShardedStep& step, double& compute_end, double& comm_end) {
  const std::size_t layers = step.layer_ms.size();
  if (step.gather_ms.size() != layers || step.update_ms.size() != layers || step.prefetch < 0) {
    throw std::invalid_argument("sharded_bound_ms: one gather and one update per forward layer, and a prefetch >= 0");
  }
  const std::size_t ahead = step.prefetch > 0 ? std::min<std::size_t>(step.prefetch, layers) : layers;
  std::vector<double> gathered(layers);
  compute_end = comm_end = 0.0;
  auto prepare = [&](std::size_t l) {  // the update of layer l, then its gather
    compute_end += step.update_ms[l];
    comm_end = std::max(comm_end, compute_end) + step.gather_ms[l];
    gathered[l] = comm_end;
  };
  for (std::size_t l = 0; l < ahead; ++l) prepare(l);
  for (std::size_t l = 0; l < layers; ++l) {
    if (l + ahead < layers) prepare(l + ahead);
    compute_end = std::max(compute_end, gathered[l]) + step.layer_ms[l];
  }
  compute_end += step.forward_rest_ms;
}

double sharded_bound_ms(const ShardedStep& step, double t_comp, double t_comm) {
  double compute_end = 0.0, comm_end = 0.0;
  sharded_forward(step, compute_end, comm_end);
  ob::run_pipeline(step.backward_ms, step.bucket_ms, step.ready_after, compute_end, comm_end);
  return ob::step_bound(std::max(compute_end, comm_end), t_comp, t_comm);
}

}  // namespace phase4
