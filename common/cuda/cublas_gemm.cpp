#include "common/cuda/cublas_gemm.hpp"

#include "common/cuda/cuda_check.hpp"

namespace ob {

namespace {

// cublasSetStream also resets the handle's workspace to the default pool: only when the stream changes, so a
// workspace set for CUDA graph capture (cublasSetWorkspace) stays.
void use_stream(cublasHandle_t handle, cudaStream_t stream) {
  cudaStream_t current = nullptr;
  CUBLAS_CHECK(cublasGetStream(handle, &current));
  if (current != stream) CUBLAS_CHECK(cublasSetStream(handle, stream));
}

// The stored row lengths of A, B and C: given, or those of packed matrices.
struct Strides {
  int a, b, c;
};
Strides strides(const RowMajorGemm& s) {
  return {s.lda > 0       ? s.lda
              : s.trans_a ? s.m
                          : s.k,
          s.ldb > 0       ? s.ldb
              : s.trans_b ? s.k
                          : s.n,
          s.ldc > 0 ? s.ldc : s.n};
}

cublasComputeType_t compute_type(bool tf32) { return tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }

}  // namespace

void cublas_gemm(cublasHandle_t handle, bool tf32, const RowMajorGemm& s, const float* a, const float* b, float* c,
                 cudaStream_t stream, float beta) {
  const float alpha = 1.0f;
  use_stream(handle, stream);
  const Strides ld = strides(s);
  CUBLAS_CHECK(cublasGemmEx(handle, s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, s.n,
                            s.m, s.k, &alpha, b, CUDA_R_32F, ld.b, a, CUDA_R_32F, ld.a, &beta, c, CUDA_R_32F, ld.c,
                            compute_type(tf32), CUBLAS_GEMM_DEFAULT));
}

void cublas_gemm_batched(cublasHandle_t handle, bool tf32, const RowMajorGemm& s, const float* a, const float* b,
                         float* c, const GemmBatch& batch, cudaStream_t stream) {
  use_stream(handle, stream);
  const Strides ld = strides(s);
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, s.n, s.m, s.k, &batch.alpha,
      b, CUDA_R_32F, ld.b, batch.stride_b, a, CUDA_R_32F, ld.a, batch.stride_a, &batch.beta, c, CUDA_R_32F, ld.c,
      batch.stride_c, batch.count, compute_type(tf32), CUBLAS_GEMM_DEFAULT));
}

}  // namespace ob
