// Launch shapes shared by phase 4's elementwise kernels: 256 threads a block, a grid-stride loop over n elements on
// at most 132 x 64 blocks.
#pragma once

#include <cstddef>

namespace phase4 {

constexpr int kThreads = 256;

inline int blocks_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 132 * 64 ? (blocks == 0 ? 1 : blocks) : 132 * 64);
}

#define GRID_STRIDE(i, n)                                                                        \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

}  // namespace phase4
