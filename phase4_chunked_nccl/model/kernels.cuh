// Phase 4's model kernels: ReLU and its backward mask, the MSE gradient, seeded initialisation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace phase4 {

void relu_inplace(float* a, std::size_t n, cudaStream_t stream);
// d *= (a > 0): the ReLU's backward, with a the layer's (post-ReLU) output.
void relu_backward(float* d, const float* a, std::size_t n, cudaStream_t stream);
// dz = 2 (y - t) / mean_over (the loss is a mean over that many elements), loss_sum += sum (y - t)^2.
void mse_grad(const float* y, const float* t, float* dz, double* loss_sum, std::size_t n, double mean_over,
              cudaStream_t stream);
// x[i] = scale * U(-1, 1), deterministic in (seed, i).
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream);

}  // namespace phase4
