// Phase 4's elementwise kernels: ReLU and its backward mask, the MSE gradient, the SGD update over the whole
// contiguous weight buffer, seeded initialisation, and the checkers' kernels (exact all-reduce pattern, weight
// fingerprint) that run on the device so multi-GB buffers need not be copied to the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace phase4 {

void relu_inplace(float* a, std::size_t n, cudaStream_t stream);
// d *= (a > 0): the ReLU's backward, with a the layer's (post-ReLU) output.
void relu_backward(float* d, const float* a, std::size_t n, cudaStream_t stream);
// dz = 2 (y - t) / n, loss_sum += sum (y - t)^2.
void mse_grad(const float* y, const float* t, float* dz, double* loss_sum, std::size_t n, cudaStream_t stream);
// w -= scale * g
void sgd(float* w, const float* g, float scale, std::size_t n, cudaStream_t stream);
// x[i] = scale * U(-1, 1), deterministic in (seed, i).
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream);
// x[i] = exact_pattern(pattern_seed(seed, rank), i): the comm-only input of one rank.
void fill_rank_pattern(float* x, std::size_t n, std::uint64_t seed, int rank, cudaStream_t stream);
// Counts elements differing from the exact sum over `ranks` of fill_rank_pattern (into *wrong, zeroed by the
// caller), and the first such index (into *first, set to ~0 by the caller).
void count_pattern_wrong(const float* x, std::size_t n, std::uint64_t seed, int ranks, unsigned long long* wrong,
                         unsigned long long* first, cudaStream_t stream);
// Order-independent 64-bit fingerprint of the bits of x (added into *out, zeroed by the caller).
void fingerprint(const float* x, std::size_t n, unsigned long long* out, cudaStream_t stream);

}  // namespace phase4
