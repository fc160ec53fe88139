// The checkers' kernels (schedule/): the exact all-reduce pattern and its count of wrong elements, error norms and a
// weight fingerprint, on the device so that multi-GB buffers need not be copied to the host; and the GPU sleep that
// lines streams up.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace phase4 {

// x[i] = exact_pattern(pattern_seed(seed, rank), i): the comm-only input of one rank.
void fill_rank_pattern(float* x, std::size_t n, std::uint64_t seed, int rank, cudaStream_t stream);
// Counts elements differing from the exact sum over `ranks` of fill_rank_pattern (into *wrong, zeroed by the
// caller), and the first such index (into *first, set to ~0 by the caller).
void count_pattern_wrong(const float* x, std::size_t n, std::uint64_t seed, int ranks, unsigned long long* wrong,
                         unsigned long long* first, cudaStream_t stream);
// out[0] += sum (a - ref)^2, out[1] += sum ref^2 (zeroed by the caller): the relative error's norms.
void diff_norms(const float* a, const float* ref, std::size_t n, double* out, cudaStream_t stream);
// Order-independent 64-bit fingerprint of the bits of x (added into *out, zeroed by the caller).
void fingerprint(const float* x, std::size_t n, unsigned long long* out, cudaStream_t stream);
// One thread that waits `ms` of GPU time (the global timer) and ends: streams that wait on an event after it start
// at the same instant, whatever the host needed to queue their work meanwhile.
void gpu_sleep(double ms, cudaStream_t stream);

}  // namespace phase4
