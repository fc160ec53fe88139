// The three GEMMs of phase 1 (and of phase 3's GPU path), all row-major C = op(A) · op(B):
//  naive:  one thread per output element.
//  tiled:  128x128 block tiles, 16-deep k-slices staged in shared memory, an 8x8 register tile per thread;
//          any shape (ragged edges are zero-filled on load and masked on store).
//  cublas: cublasGemmEx with fp32 compute, or TF32 tensor-core compute when `tf32` is set.
// op(A) is M x K: A itself is M x K, or K x M when trans_a. op(B) is K x N: B is K x N, or N x K when trans_b.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace phase1 {

enum class GemmKernel { kNaive, kTiled, kCublas };

GemmKernel parse_gemm_kernel(const std::string& name);  // "naive" | "tiled" | "cublas"; throws std::invalid_argument
const char* gemm_kernel_name(GemmKernel kernel);

struct GemmShape {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};

// Enqueues C = op(A) · op(B) on `stream`. `cublas` is only used by GemmKernel::kCublas (its stream is set here).
void gemm(GemmKernel kernel, cublasHandle_t cublas, bool tf32, const GemmShape& shape, const float* a, const float* b,
          float* c, cudaStream_t stream);

}  // namespace phase1
