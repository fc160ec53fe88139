// The strategies' kernels (sync/): the SGD update over a contiguous weight buffer (fp32 or the communicated bf16
// gradient), the bf16 casts of the communicated gradient, and the sums of the copy-engine and sharded strategies.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace phase4 {

// w -= scale * g; the bf16 form reads the communicated gradient directly (the cast back fused into the update).
void sgd(float* w, const float* g, float scale, std::size_t n, cudaStream_t stream);
void sgd(float* w, const __nv_bfloat16* g, float scale, std::size_t n, cudaStream_t stream);
// The communicated copy of a bf16 gradient, rounded to nearest even, and back.
void to_bf16(const float* x, __nv_bfloat16* y, std::size_t n, cudaStream_t stream);
void from_bf16(const __nv_bfloat16* y, float* x, std::size_t n, cudaStream_t stream);
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

}  // namespace phase4
