#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/cuda/cuda_check.hpp"
#include "common/verify.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/model/launch.cuh"

namespace phase4 {
namespace {

__device__ __forceinline__ std::uint64_t pattern_seed(std::uint64_t seed, int rank) {
  return seed + 7919u * static_cast<std::uint64_t>(rank + 1);
}

__global__ void relu_kernel(float* a, std::size_t n) { GRID_STRIDE(i, n) a[i] = fmaxf(a[i], 0.0f); }

__global__ void relu_backward_kernel(float* d, const float* a, std::size_t n) {
  GRID_STRIDE(i, n) if (!(a[i] > 0.0f)) d[i] = 0.0f;
}

__global__ void mse_grad_kernel(const float* y, const float* t, float* dz, double* loss_sum, std::size_t n,
                                float scale) {
  __shared__ double partial[kThreads];
  double local = 0.0;
  GRID_STRIDE(i, n) {
    const float d = y[i] - t[i];
    dz[i] = scale * d;
    local += static_cast<double>(d) * d;
  }
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(loss_sum, partial[0]);
}

__device__ __forceinline__ float as_float(float x) { return x; }
__device__ __forceinline__ float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename G>
__global__ void sgd_kernel(float* w, const G* g, float scale, std::size_t n) {
  GRID_STRIDE(i, n) w[i] -= scale * as_float(g[i]);
}

__global__ void uniform_kernel(float* x, std::size_t n, std::uint64_t seed, float scale) {
  GRID_STRIDE(i, n) x[i] = scale * (ob::exact_pattern(seed, i, 1000) / 1000.0f);
}

__global__ void rank_pattern_kernel(float* x, std::size_t n, std::uint64_t seed, int rank) {
  GRID_STRIDE(i, n) x[i] = ob::exact_pattern(pattern_seed(seed, rank), i);
}

__global__ void pattern_wrong_kernel(const float* x, std::size_t n, std::uint64_t seed, int ranks,
                                     unsigned long long* wrong, unsigned long long* first) {
  GRID_STRIDE(i, n) {
    float expected = 0.0f;
    for (int r = 0; r < ranks; ++r) expected += ob::exact_pattern(pattern_seed(seed, r), i);
    if (__float_as_uint(x[i]) != __float_as_uint(expected)) {
      atomicAdd(wrong, 1ull);
      atomicMin(first, static_cast<unsigned long long>(i));
    }
  }
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

__global__ void diff_norms_kernel(const float* a, const float* ref, std::size_t n, double* out) {
  __shared__ double partial[2][kThreads];
  double diff = 0.0, norm = 0.0;
  GRID_STRIDE(i, n) {
    const double d = static_cast<double>(a[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  partial[0][threadIdx.x] = diff;
  partial[1][threadIdx.x] = norm;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      partial[0][threadIdx.x] += partial[0][threadIdx.x + s];
      partial[1][threadIdx.x] += partial[1][threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(out, partial[0][0]);
    atomicAdd(out + 1, partial[1][0]);
  }
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

__global__ void fingerprint_kernel(const float* x, std::size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  GRID_STRIDE(i, n) {
    unsigned long long z = (static_cast<unsigned long long>(__float_as_uint(x[i])) << 32) ^ i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    local += z ^ (z >> 31);  // wrap-around sum: the same whatever the order
  }
  atomicAdd(out, local);
}

}  // namespace

void relu_inplace(float* a, std::size_t n, cudaStream_t s) {
  relu_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, n);
  CUDA_CHECK_LAUNCH();
}
void relu_backward(float* d, const float* a, std::size_t n, cudaStream_t s) {
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, a, n);
  CUDA_CHECK_LAUNCH();
}
void mse_grad(const float* y, const float* t, float* dz, double* loss_sum, std::size_t n, double mean_over,
              cudaStream_t s) {
  mse_grad_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, t, dz, loss_sum, n, static_cast<float>(2.0 / mean_over));
  CUDA_CHECK_LAUNCH();
}
void sgd(float* w, const float* g, float scale, std::size_t n, cudaStream_t s) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, scale, n);
  CUDA_CHECK_LAUNCH();
}
void sgd(float* w, const __nv_bfloat16* g, float scale, std::size_t n, cudaStream_t s) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, scale, n);
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
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}
void fill_rank_pattern(float* x, std::size_t n, std::uint64_t seed, int rank, cudaStream_t s) {
  rank_pattern_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, rank);
  CUDA_CHECK_LAUNCH();
}
void count_pattern_wrong(const float* x, std::size_t n, std::uint64_t seed, int ranks, unsigned long long* wrong,
                         unsigned long long* first, cudaStream_t s) {
  pattern_wrong_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, ranks, wrong, first);
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
void diff_norms(const float* a, const float* ref, std::size_t n, double* out, cudaStream_t s) {
  diff_norms_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, ref, n, out);
  CUDA_CHECK_LAUNCH();
}
void fingerprint(const float* x, std::size_t n, unsigned long long* out, cudaStream_t s) {
  fingerprint_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, out);
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

namespace {
__global__ void sleep_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
}  // namespace

void gpu_sleep(double ms, cudaStream_t s) {
  sleep_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(ms * 1e6));
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
