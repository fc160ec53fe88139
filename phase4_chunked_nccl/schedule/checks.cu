#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "common/verify.hpp"
#include "phase4_chunked_nccl/model/launch.cuh"
#include "phase4_chunked_nccl/schedule/checks.cuh"

namespace phase4 {
namespace {

__device__ __forceinline__ std::uint64_t pattern_seed(std::uint64_t seed, int rank) {
  return seed + 7919u * static_cast<std::uint64_t>(rank + 1);
}

__global__ void rank_pattern_kernel(float* x, std::size_t n, std::uint64_t seed, int rank) {
  GRID_STRIDE(i, n) x[i] = ob::exact_pattern(pattern_seed(seed, rank), i);
}

__global__ void pattern_wrong_kernel(const float* x, std::size_t n, std::uint64_t seed, int ranks,
                                     unsigned long long* wrong, unsigned long long* first) {
  GRID_STRIDE(i, n) {
    float expected = 0.0f;
    for (int r = 0; r < ranks; ++r) expected += ob::exact_pattern(pattern_seed(seed, r), i);
    if (__float_as_uint(x[i]) != __float_as_uint(expected)) {
      atomicAdd(wrong, 1ull);
      atomicMin(first, static_cast<unsigned long long>(i));
    }
  }
}

__global__ void diff_norms_kernel(const float* a, const float* ref, std::size_t n, double* out) {
  __shared__ double partial[2][kThreads];
  double diff = 0.0, norm = 0.0;
  GRID_STRIDE(i, n) {
    const double d = static_cast<double>(a[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  partial[0][threadIdx.x] = diff;
  partial[1][threadIdx.x] = norm;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      partial[0][threadIdx.x] += partial[0][threadIdx.x + s];
      partial[1][threadIdx.x] += partial[1][threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(out, partial[0][0]);
    atomicAdd(out + 1, partial[1][0]);
  }
}

__global__ void fingerprint_kernel(const float* x, std::size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  GRID_STRIDE(i, n) {
    unsigned long long z = (static_cast<unsigned long long>(__float_as_uint(x[i])) << 32) ^ i;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    local += z ^ (z >> 31);  // wrap-around sum: the same whatever the order
  }
  atomicAdd(out, local);
}

__global__ void sleep_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

void fill_rank_pattern(float* x, std::size_t n, std::uint64_t seed, int rank, cudaStream_t s) {
  rank_pattern_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, rank);
  CUDA_CHECK_LAUNCH();
}
void count_pattern_wrong(const float* x, std::size_t n, std::uint64_t seed, int ranks, unsigned long long* wrong,
                         unsigned long long* first, cudaStream_t s) {
  pattern_wrong_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, seed, ranks, wrong, first);
  CUDA_CHECK_LAUNCH();
}
void diff_norms(const float* a, const float* ref, std::size_t n, double* out, cudaStream_t s) {
  diff_norms_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, ref, n, out);
  CUDA_CHECK_LAUNCH();
}
void fingerprint(const float* x, std::size_t n, unsigned long long* out, cudaStream_t s) {
  fingerprint_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, out);
  CUDA_CHECK_LAUNCH();
}
void gpu_sleep(double ms, cudaStream_t s) {
  sleep_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(ms * 1e6));
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
