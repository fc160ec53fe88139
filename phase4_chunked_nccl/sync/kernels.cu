#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/cuda/cuda_check.hpp"
#include "phase4_chunked_nccl/model/launch.cuh"
#include "phase4_chunked_nccl/sync/kernels.cuh"

namespace phase4 {
namespace {

__device__ __forceinline__ float as_float(float x) { return x; }
__device__ __forceinline__ float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename G>
__global__ void sgd_kernel(float* w, const G* g, float scale, std::size_t n) {
  GRID_STRIDE(i, n) w[i] -= scale * as_float(g[i]);
}

// Four elements per thread (one 16-byte load, one 8-byte store) when x and y are aligned for it, as a bucket that
// starts on a multiple of 4 elements is; the remainder (or an unaligned bucket) one by one.
__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, std::size_t n) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 8 == 0;
  const std::size_t quads = aligned ? n / 4 : 0;
  GRID_STRIDE(i, quads) {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 packed;
    memcpy(&packed.x, &lo, sizeof lo);
    memcpy(&packed.y, &hi, sizeof hi);
    reinterpret_cast<uint2*>(y)[i] = packed;
  }
  GRID_STRIDE(i, n - 4 * quads) y[4 * quads + i] = __float2bfloat16_rn(x[4 * quads + i]);
}

__global__ void from_bf16_kernel(const __nv_bfloat16* y, float* x, std::size_t n) {
  GRID_STRIDE(i, n) x[i] = __bfloat162float(y[i]);
}

__global__ void sum_slices_kernel(const float4* in, std::size_t stride4, int slices, float4* out, std::size_t n4) {
  GRID_STRIDE(i, n4) {
    float4 acc = in[i];
    for (int j = 1; j < slices; ++j) {  // in rank order: every rank's sum has the same bits
      const float4 v = in[j * stride4 + i];
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    out[i] = acc;
  }
}

// Element i of the flattened rows: where it lies in a buffer of row stride `stride`, and the sum of its parts.
__device__ std::size_t row_offset(const RowSlices& shape, std::size_t i, std::size_t stride) {
  return i / shape.n * stride + i % shape.n;
}
__device__ float parts_sum(const float* in, const RowSlices& shape, std::size_t i) {
  const float* p = in + row_offset(shape, i, shape.in_stride);
  float acc = p[0];
  for (int j = 1; j < shape.parts; ++j) acc += p[j * shape.part_stride];  // in part (rank) order
  return acc;
}

__global__ void sum_rows_kernel(float* out, const float* in, RowSlices shape) {
  GRID_STRIDE(i, shape.rows * shape.n) out[row_offset(shape, i, shape.out_stride)] = parts_sum(in, shape, i);
}

__global__ void sgd_rows_kernel(float* w, const float* g, float scale, RowSlices shape) {
  GRID_STRIDE(i, shape.rows * shape.n) w[row_offset(shape, i, shape.out_stride)] -= scale * parts_sum(g, shape, i);
}

}  // namespace

void sgd(float* w, const float* g, float scale, std::size_t n, cudaStream_t s) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, scale, n);
  CUDA_CHECK_LAUNCH();
}
void sgd(float* w, const __nv_bfloat16* g, float scale, std::size_t n, cudaStream_t s) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, scale, n);
  CUDA_CHECK_LAUNCH();
}
void to_bf16(const float* x, __nv_bfloat16* y, std::size_t n, cudaStream_t s) {
  to_bf16_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}
void from_bf16(const __nv_bfloat16* y, float* x, std::size_t n, cudaStream_t s) {
  from_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, x, n);
  CUDA_CHECK_LAUNCH();
}
void sum_slices(const float* in, std::size_t stride, int slices, float* out, std::size_t n, cudaStream_t stream) {
  if (n % 4 || stride % 4 || reinterpret_cast<std::uintptr_t>(in) % 16 || reinterpret_cast<std::uintptr_t>(out) % 16) {
    throw std::invalid_argument("sum_slices: slices must be 16-byte aligned multiples of 4 elements");
  }
  sum_slices_kernel<<<blocks_for(n / 4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(in), stride / 4, slices,
                                                                reinterpret_cast<float4*>(out), n / 4);
  CUDA_CHECK_LAUNCH();
}
void sum_rows(float* out, const float* in, const RowSlices& shape, cudaStream_t s) {
  if (shape.rows * shape.n == 0) return;
  sum_rows_kernel<<<blocks_for(shape.rows * shape.n), kThreads, 0, s>>>(out, in, shape);
  CUDA_CHECK_LAUNCH();
}
void sgd_rows(float* w, const float* g, float scale, const RowSlices& shape, cudaStream_t s) {
  if (shape.rows * shape.n == 0) return;
  sgd_rows_kernel<<<blocks_for(shape.rows * shape.n), kThreads, 0, s>>>(w, g, scale, shape);
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
