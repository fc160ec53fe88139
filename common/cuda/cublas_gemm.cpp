#include "common/cuda/cublas_gemm.hpp"

#include "common/cuda/cuda_check.hpp"

namespace ob {

void cublas_gemm(cublasHandle_t handle, bool tf32, const RowMajorGemm& s, const float* a, const float* b, float* c,
                 cudaStream_t stream, float beta) {
  const float alpha = 1.0f;
  // cublasSetStream also resets the handle's workspace to the default pool: only when the stream changes, so a
  // workspace set for CUDA graph capture (cublasSetWorkspace) stays.
  cudaStream_t current = nullptr;
  CUBLAS_CHECK(cublasGetStream(handle, &current));
  if (current != stream) CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasGemmEx(handle, s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, s.n,
                            s.m, s.k, &alpha, b, CUDA_R_32F, s.trans_b ? s.k : s.n, a, CUDA_R_32F,
                            s.trans_a ? s.m : s.k, &beta, c, CUDA_R_32F, s.n,
                            tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ob
