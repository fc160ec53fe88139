// Phase 4's device checkers on a GPU: the pattern counter finds every corrupted element of a three-rank sum and the
// first one's index, and the fingerprint sees one flipped bit. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/schedule/checks.cuh"
#include "tests/phase4/phase4_gpu_fixture.hpp"

using phase4_test::Phase4Gpu;

TEST_F(Phase4Gpu, DeviceCheckersCountACorruptedBuffer) {
  const std::size_t n = 100003;
  const std::uint64_t seed = 42;
  std::vector<float> sum(n, 0.0f);
  for (int r = 0; r < 3; ++r) {
    ob::DeviceBuffer<float> one(n);
    phase4::fill_rank_pattern(one.get(), n, seed, r, nullptr);
    const auto values = one.download();
    for (std::size_t i = 0; i < n; ++i) sum[i] += values[i];
  }
  for (std::size_t i : {std::size_t{17}, std::size_t{5000}, n - 1}) sum[i] += 1.0f;
  ob::DeviceBuffer<float> buffer(n);
  buffer.upload(sum);
  ob::DeviceBuffer<unsigned long long> counts(2);
  CUDA_CHECK(cudaMemset(counts.get(), 0, sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(counts.get() + 1, 0xff, sizeof(unsigned long long)));
  phase4::count_pattern_wrong(buffer.get(), n, seed, 3, counts.get(), counts.get() + 1, nullptr);
  const auto got = counts.download();
  EXPECT_EQ(got[0], 3u);
  EXPECT_EQ(got[1], 17u);
  // The fingerprint sees one flipped bit.
  ob::DeviceBuffer<unsigned long long> print(1);
  auto fingerprint_of = [&] {
    CUDA_CHECK(cudaMemset(print.get(), 0, sizeof(unsigned long long)));
    phase4::fingerprint(buffer.get(), n, print.get(), nullptr);
    return print.download()[0];
  };
  const auto before = fingerprint_of();
  sum[999] = std::nextafter(sum[999], 1e9f);
  buffer.upload(sum);
  EXPECT_NE(fingerprint_of(), before);
}
