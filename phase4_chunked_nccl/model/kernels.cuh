// Phase 4's elementwise kernels: ReLU and its backward mask, the MSE gradient, the SGD update over the whole
// contiguous weight buffer, seeded initialisation, the bf16 casts of the communicated gradient, and the checkers'
// kernels (exact all-reduce pattern, error norms, weight fingerprint) that run on the device so multi-GB buffers
// need not be copied to the host.
#pragma once

#include <cuda_bf16.h>
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
// w -= scale * g; the bf16 form reads the communicated gradient directly (the cast back fused into the update).
void sgd(float* w, const float* g, float scale, std::size_t n, cudaStream_t stream);
void sgd(float* w, const __nv_bfloat16* g, float scale, std::size_t n, cudaStream_t stream);
// x[i] = scale * U(-1, 1), deterministic in (seed, i).
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream);
// x[i] = exact_pattern(pattern_seed(seed, rank), i): the comm-only input of one rank.
void fill_rank_pattern(float* x, std::size_t n, std::uint64_t seed, int rank, cudaStream_t stream);
// Counts elements differing from the exact sum over `ranks` of fill_rank_pattern (into *wrong, zeroed by the
// caller), and the first such index (into *first, set to ~0 by the caller).
void count_pattern_wrong(const float* x, std::size_t n, std::uint64_t seed, int ranks, unsigned long long* wrong,
                         unsigned long long* first, cudaStream_t stream);
// The communicated copy of a bf16 gradient, rounded to nearest even, and back.
void to_bf16(const float* x, __nv_bfloat16* y, std::size_t n, cudaStream_t stream);
void from_bf16(const __nv_bfloat16* y, float* x, std::size_t n, cudaStream_t stream);
// out[0] += sum (a - ref)^2, out[1] += sum ref^2 (zeroed by the caller): the relative error's norms.
void diff_norms(const float* a, const float* ref, std::size_t n, double* out, cudaStream_t stream);
// out[i] = in[i] + in[stride + i] + ... over `slices` slices, in slice order, on as many blocks as fill the GPU (it is
// memory-bound: one wave of 132 blocks moved 2 TB/s, these 3.5). n and stride multiples of 4, pointers 16-byte aligned.
void sum_slices(const float* in, std::size_t stride, int slices, float* out, std::size_t n, cudaStream_t stream);
// Row-strided slices (the sharded strategies: one row per layer). Row r's slice of `out`/`w` starts at r * out_stride,
// its `parts` parts of `in`/`g` at r * in_stride + j * part_stride; each is n elements long, over `rows` rows.
// sum_rows: out = the parts summed in part order. sgd_rows: w -= scale * (the same sum): with one part, the same
// bits as sgd().
struct RowSlices {
  std::size_t rows = 0, n = 0, out_stride = 0, in_stride = 0, part_stride = 0;
  int parts = 1;
};
void sum_rows(float* out, const float* in, const RowSlices& shape, cudaStream_t stream);
void sgd_rows(float* w, const float* g, float scale, const RowSlices& shape, cudaStream_t stream);
// Order-independent 64-bit fingerprint of the bits of x (added into *out, zeroed by the caller).
void fingerprint(const float* x, std::size_t n, unsigned long long* out, cudaStream_t stream);
// One thread that waits `ms` of GPU time (the global timer) and ends: streams that wait on an event after it start
// at the same instant, whatever the host needed to queue their work meanwhile.
void gpu_sleep(double ms, cudaStream_t stream);

}  // namespace phase4
