// The attention core's causal softmax and its backward (transformer_kernels.cuh), one row of the seq x seq scores a
// thread block.
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "common/cuda/cuda_check.hpp"
#include "phase4_chunked_nccl/model/block_reduce.cuh"
#include "phase4_chunked_nccl/model/launch.cuh"
#include "phase4_chunked_nccl/model/transformer_kernels.cuh"

namespace phase4 {
namespace {

// The attention core's softmax, one row of the seq x seq scores a block. A row of up to kItems x kThreads columns is
// held in registers, so each way reads its rows once and writes once: the forward reads only the row's unmasked
// columns (0..i of query i) and writes p, 0 above the diagonal; the backward reads p and dp and writes
// ds = scale * p * (dp - rowsum(p * dp)) over dp. kItems 0: longer rows, read from memory again for each reduction.
template <int kItems>
__global__ void causal_softmax_kernel(float* p, int s) {
  __shared__ float shared[32];
  const std::size_t r = blockIdx.x;
  const int seen = static_cast<int>(r % s);
  float* row = p + r * s;
  float top = -INFINITY;
  if constexpr (kItems > 0) {
    float v[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int c = threadIdx.x + i * kThreads;
      v[i] = c <= seen ? row[c] : -INFINITY;
      top = fmaxf(top, v[i]);
    }
    top = block_max(top, shared);
    float sum = 0;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      v[i] = __expf(v[i] - top);  // 0 above the diagonal
      sum += v[i];
    }
    const float inv = 1.0f / block_sum(sum, shared);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < s) row[c] = v[i] * inv;
    }
  } else {
    for (int c = threadIdx.x; c <= seen; c += kThreads) top = fmaxf(top, row[c]);
    top = block_max(top, shared);
    float sum = 0;
    for (int c = threadIdx.x; c <= seen; c += kThreads) sum += __expf(row[c] - top);
    const float inv = 1.0f / block_sum(sum, shared);
    for (int c = threadIdx.x; c < s; c += kThreads) row[c] = c <= seen ? __expf(row[c] - top) * inv : 0.0f;
  }
}

template <int kItems>
__global__ void softmax_backward_kernel(const float* p, float* dp, int s, float scale) {
  __shared__ float shared[32];
  const std::size_t r = blockIdx.x;
  const float* pr = p + r * s;
  float* dr = dp + r * s;
  float dot = 0;
  if constexpr (kItems > 0) {
    float pv[kItems], dv[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int c = threadIdx.x + i * kThreads;
      pv[i] = c < s ? pr[c] : 0.0f;
      dv[i] = c < s ? dr[c] : 0.0f;
      dot += pv[i] * dv[i];
    }
    dot = block_sum(dot, shared);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < s) dr[c] = scale * pv[i] * (dv[i] - dot);
    }
  } else {
    for (int c = threadIdx.x; c < s; c += kThreads) dot += pr[c] * dr[c];
    dot = block_sum(dot, shared);
    for (int c = threadIdx.x; c < s; c += kThreads) dr[c] = scale * pr[c] * (dr[c] - dot);
  }
}

// Runs `launch` with the smallest kItems whose kItems x kThreads columns hold a row of `s`; 0 beyond 32.
template <typename Launch>
void by_row_length(int s, Launch&& launch) {
  if (s <= kThreads) return launch(std::integral_constant<int, 1>{});
  if (s <= 2 * kThreads) return launch(std::integral_constant<int, 2>{});
  if (s <= 4 * kThreads) return launch(std::integral_constant<int, 4>{});
  if (s <= 8 * kThreads) return launch(std::integral_constant<int, 8>{});
  if (s <= 16 * kThreads) return launch(std::integral_constant<int, 16>{});
  if (s <= 32 * kThreads) return launch(std::integral_constant<int, 32>{});
  launch(std::integral_constant<int, 0>{});
}

}  // namespace

void causal_softmax(float* p, std::size_t rows, int seq, cudaStream_t s) {
  by_row_length(seq, [&](auto items) {
    causal_softmax_kernel<decltype(items)::value><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(p, seq);
  });
  CUDA_CHECK_LAUNCH();
}

void softmax_backward(const float* p, float* dp, std::size_t rows, int seq, float scale, cudaStream_t s) {
  by_row_length(seq, [&](auto items) {
    softmax_backward_kernel<decltype(items)::value><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(p, dp, seq, scale);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
