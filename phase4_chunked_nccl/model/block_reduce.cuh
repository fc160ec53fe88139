// The sum or the maximum of one value per thread over a thread block, in a fixed order (the same bits every run),
// for the kernels that reduce one row a block (norms, the attention softmax, the loss).
#pragma once

#include <cmath>

namespace phase4 {

// The sum (or max) over the block's threads, in a fixed order: every thread gets it. `shared` holds 32 floats.
template <bool kMax>
__device__ inline float block_reduce(float v, float* shared) {
  auto combine = [](float a, float b) { return kMax ? fmaxf(a, b) : a + b; };
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // `shared` may still be read from the last reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? shared[lane] : (kMax ? -INFINITY : 0.0f);
    for (int offset = 16; offset > 0; offset >>= 1) w = combine(w, __shfl_xor_sync(0xffffffffu, w, offset));
    if (lane == 0) shared[0] = w;
  }
  __syncthreads();
  return shared[0];
}
__device__ inline float block_sum(float v, float* shared) { return block_reduce<false>(v, shared); }
__device__ inline float block_max(float v, float* shared) { return block_reduce<true>(v, shared); }

}  // namespace phase4
