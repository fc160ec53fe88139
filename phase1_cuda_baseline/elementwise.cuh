// The elementwise kernels of the training step: the MSE loss with its gradient, and the SGD update.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace phase1 {

// dy = 2 (y - t) / mean_over and loss_sum += sum (y - t)^2 over n elements (loss_sum is one double on the device,
// zeroed by the caller). mean_over is the element count the loss averages over: n itself (0 means n), or the
// global count when each data-parallel rank holds a share of the batch.
void mse_loss_grad(const float* y, const float* t, float* dy, double* loss_sum, std::size_t n, cudaStream_t stream,
                   std::size_t mean_over = 0);

// w -= lr * dw
void sgd_update(float* w, const float* dw, float lr, std::size_t n, cudaStream_t stream);

// w = value everywhere (poisoning buffers in tests)
void fill(float* w, float value, std::size_t n, cudaStream_t stream);

}  // namespace phase1
