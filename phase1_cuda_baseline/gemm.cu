#include <stdexcept>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "phase1_cuda_baseline/gemm.cuh"

namespace phase1 {
namespace {

// Element (row, col) of op(X), where X is stored row-major as rows x cols, or transposed (cols x rows).
template <bool kTrans>
__device__ __forceinline__ float load_op(const float* x, int row, int col, int rows, int cols) {
  return kTrans ? x[static_cast<size_t>(col) * rows + row] : x[static_cast<size_t>(row) * cols + col];
}

template <bool kTransA, bool kTransB>
__global__ void naive_gemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                           int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += load_op<kTransA>(a, row, i, m, k) * load_op<kTransB>(b, i, col, k, n);
  c[static_cast<size_t>(row) * n + col] = sum;
}

constexpr int kBM = 128, kBN = 128, kBK = 16, kTM = 8, kTN = 8, kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kPad = 4;  // keeps float4 alignment while spreading transposed stores over banks

template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads)
    tiled_gemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) float as[kBK][kBM + kPad];  // as[kk][row]: op(A) tile, transposed
  __shared__ __align__(16) float bs[kBK][kBN + kPad];  // bs[kk][col]
  const int tid = threadIdx.x;
  const int tx = tid % (kBN / kTN), ty = tid / (kBN / kTN);
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM][kTN] = {};

  for (int k0 = 0; k0 < k; k0 += kBK) {
    // Each thread loads 8 elements of each tile; the index order makes consecutive threads read consecutive
    // addresses for either storage order.
#pragma unroll
    for (int i = 0; i < kBM * kBK / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      const int r = kTransA ? idx % kBM : idx / kBK, kk = kTransA ? idx / kBM : idx % kBK;
      const int gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? load_op<kTransA>(a, gr, gk, m, k) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBN * kBK / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      const int cc = kTransB ? idx / kBK : idx % kBN, kk = kTransB ? idx % kBK : idx / kBN;
      const int gc = col0 + cc, gk = k0 + kk;
      bs[kk][cc] = (gc < n && gk < k) ? load_op<kTransB>(b, gk, gc, k, n) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float ra[kTM], rb[kTN];
      const float4 a0 = *reinterpret_cast<const float4*>(&as[kk][ty * kTM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[kk][ty * kTM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[kk][tx * kTN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[kk][tx * kTN + 4]);
      ra[0] = a0.x;
      ra[1] = a0.y;
      ra[2] = a0.z;
      ra[3] = a0.w;
      ra[4] = a1.x;
      ra[5] = a1.y;
      ra[6] = a1.z;
      ra[7] = a1.w;
      rb[0] = b0.x;
      rb[1] = b0.y;
      rb[2] = b0.z;
      rb[3] = b0.w;
      rb[4] = b1.x;
      rb[5] = b1.y;
      rb[6] = b1.z;
      rb[7] = b1.w;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += ra[i] * rb[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + ty * kTM + i;
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = col0 + tx * kTN + j;
      if (col < n) c[static_cast<size_t>(row) * n + col] = acc[i][j];
    }
  }
}

template <bool kTransA, bool kTransB>
void launch_naive(const GemmShape& s, const float* a, const float* b, float* c, cudaStream_t stream) {
  const dim3 block(16, 16);
  const dim3 grid((s.n + block.x - 1) / block.x, (s.m + block.y - 1) / block.y);
  naive_gemm<kTransA, kTransB><<<grid, block, 0, stream>>>(a, b, c, s.m, s.n, s.k);
}

template <bool kTransA, bool kTransB>
void launch_tiled(const GemmShape& s, const float* a, const float* b, float* c, cudaStream_t stream) {
  const dim3 grid((s.n + kBN - 1) / kBN, (s.m + kBM - 1) / kBM);
  tiled_gemm<kTransA, kTransB><<<grid, kThreads, 0, stream>>>(a, b, c, s.m, s.n, s.k);
}

template <bool kTransA, bool kTransB>
void launch(GemmKernel kernel, const GemmShape& s, const float* a, const float* b, float* c, cudaStream_t stream) {
  if (kernel == GemmKernel::kNaive) {
    launch_naive<kTransA, kTransB>(s, a, b, c, stream);
  } else {
    launch_tiled<kTransA, kTransB>(s, a, b, c, stream);
  }
}

}  // namespace

GemmKernel parse_gemm_kernel(const std::string& name) {
  if (name == "naive") return GemmKernel::kNaive;
  if (name == "tiled") return GemmKernel::kTiled;
  if (name == "cublas") return GemmKernel::kCublas;
  throw std::invalid_argument("unknown GEMM kernel '" + name + "'");
}

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kNaive: return "naive";
    case GemmKernel::kTiled: return "tiled";
    default: return "cublas";
  }
}

void gemm(GemmKernel kernel, cublasHandle_t cublas, bool tf32, const GemmShape& s, const float* a, const float* b,
          float* c, cudaStream_t stream) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("gemm: sizes must be positive");
  if (kernel == GemmKernel::kCublas) {
    ob::cublas_gemm(cublas, tf32, {s.m, s.n, s.k, s.trans_a, s.trans_b}, a, b, c, stream);
    return;
  }
  if (s.trans_a) {
    s.trans_b ? launch<true, true>(kernel, s, a, b, c, stream) : launch<true, false>(kernel, s, a, b, c, stream);
  } else {
    s.trans_b ? launch<false, true>(kernel, s, a, b, c, stream) : launch<false, false>(kernel, s, a, b, c, stream);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase1
