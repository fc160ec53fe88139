#include "common/cuda/cuda_check.hpp"
#include "phase1_cuda_baseline/elementwise.cuh"

namespace phase1 {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 16 ? blocks : 65535 * 16);
}

__global__ void mse_loss_grad_kernel(const float* __restrict__ y, const float* __restrict__ t, float* __restrict__ dy,
                                     double* loss_sum, std::size_t n, float scale) {
  __shared__ double partial[kThreads];
  double local = 0.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float d = y[i] - t[i];
    dy[i] = scale * d;
    local += static_cast<double>(d) * d;
  }
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(loss_sum, partial[0]);
}

__global__ void sgd_kernel(float* __restrict__ w, const float* __restrict__ dw, float lr, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    w[i] -= lr * dw[i];
  }
}

__global__ void fill_kernel(float* w, float value, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    w[i] = value;
  }
}

}  // namespace

void mse_loss_grad(const float* y, const float* t, float* dy, double* loss_sum, std::size_t n, cudaStream_t stream,
                   std::size_t mean_over) {
  const float scale = 2.0f / static_cast<float>(mean_over == 0 ? n : mean_over);
  mse_loss_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, t, dy, loss_sum, n, scale);
  CUDA_CHECK_LAUNCH();
}

void sgd_update(float* w, const float* dw, float lr, std::size_t n, cudaStream_t stream) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, dw, lr, n);
  CUDA_CHECK_LAUNCH();
}

void fill(float* w, float value, std::size_t n, cudaStream_t stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, value, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase1
