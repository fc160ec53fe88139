// Row-major GEMM through cuBLAS: C = op(A) · op(B), with op(A) M x K (A stored M x K, or K x M when trans_a) and
// op(B) K x N (B stored K x N, or N x K when trans_b). fp32 compute, or TF32 tensor cores when `tf32`.
// cuBLAS is column-major: row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ, so B goes first.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace ob {

struct RowMajorGemm {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int lda = 0, ldb = 0, ldc = 0;  // row strides of A, B, C as stored (0: packed, the stored row's length)
};

void cublas_gemm(cublasHandle_t handle, bool tf32, const RowMajorGemm& shape, const float* a, const float* b, float* c,
                 cudaStream_t stream, float beta = 0.0f);

// `batch` such GEMMs at once, the i-th on a + i * stride_a, b + i * stride_b, c + i * stride_c (elements; 0 reuses
// one matrix), C = alpha · op(A) · op(B) + beta · C: the attention core's per-head GEMMs.
struct GemmBatch {
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int count = 1;
  float alpha = 1.0f, beta = 0.0f;
};
void cublas_gemm_batched(cublasHandle_t handle, bool tf32, const RowMajorGemm& shape, const float* a, const float* b,
                         float* c, const GemmBatch& batch, cudaStream_t stream);

}  // namespace ob
