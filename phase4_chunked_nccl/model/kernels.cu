#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "common/verify.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/model/launch.cuh"

namespace phase4 {
namespace {

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

__global__ void uniform_kernel(float* x, std::size_t n, std::uint64_t seed, float scale) {
  GRID_STRIDE(i, n) x[i] = scale * (ob::exact_pattern(seed, i, 1000) / 1000.0f);
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
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
