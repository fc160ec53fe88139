#include "phase4_chunked_nccl/core/spec.hpp"

#include <vector>

namespace phase4 {

GradientLayout ModelSpec::layout() const {
  if (!transformer()) return GradientLayout::equal(layers, hidden);
  std::vector<std::uint64_t> sizes;
  for (const auto& tensor : parameter_tensors(shape, blocks))
    sizes.push_back(static_cast<std::uint64_t>(tensor.elements()));
  return GradientLayout::of_sizes(sizes);
}

double ModelSpec::grad_mb() const { return 4.0 * static_cast<double>(layout().elements()) / (1 << 20); }

}  // namespace phase4
