// The elementwise kernels of the training step: the MSE loss with its gradient, and the SGD update.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace phase1 {

// dy = 2 (y - t) / n and loss_sum += sum (y - t)^2 (loss_sum is one double on the device, zeroed by the caller).
void mse_loss_grad(const float* y, const float* t, float* dy, double* loss_sum, std::size_t n, cudaStream_t stream);

// w -= lr * dw
void sgd_update(float* w, const float* dw, float lr, std::size_t n, cudaStream_t stream);

// w = value everywhere (poisoning buffers in tests)
void fill(float* w, float value, std::size_t n, cudaStream_t stream);

}  // namespace phase1
