// The CPU side of phase 1's kernels: the double reference against hand-computed products, and the OpenMP GEMM.
#include <gtest/gtest.h>

#include "common/verify.hpp"
#include "phase1_cuda_baseline/cpu_gemm.hpp"

TEST(ReferenceGemm, HandComputedTwoByTwo) {
  const float a[] = {1, 2, 3, 4};  // [[1, 2], [3, 4]]
  const float b[] = {5, 6, 7, 8};  // [[5, 6], [7, 8]]
  EXPECT_EQ(phase1::reference_gemm_rows({2, 2, 2}, a, b, {0, 1}), (std::vector<double>{19, 22, 43, 50}));
  // Aᵀ·B = [[1, 3], [2, 4]]·B = [[26, 30], [38, 44]]
  EXPECT_EQ(phase1::reference_gemm_rows({2, 2, 2, true, false}, a, b, {0, 1}), (std::vector<double>{26, 30, 38, 44}));
  // A·Bᵀ = A·[[5, 7], [6, 8]] = [[17, 23], [39, 53]]
  EXPECT_EQ(phase1::reference_gemm_rows({2, 2, 2, false, true}, a, b, {1}), (std::vector<double>{39, 53}));
}

TEST(ReferenceGemm, RectangularAndOneByOne) {
  const float x[] = {1, 2, 3};  // 1x3
  const float w[] = {1, 0, 2, 1, 0, 3};  // 3x2: [[1,0],[2,1],[0,3]]
  EXPECT_EQ(phase1::reference_gemm_rows({1, 2, 3}, x, w, {0}), (std::vector<double>{5, 11}));
  const float s[] = {-3}, t[] = {7};
  EXPECT_EQ(phase1::reference_gemm_rows({1, 1, 1}, s, t, {0}), (std::vector<double>{-21}));
}

TEST(ReferenceGemm, RowsToCheck) {
  EXPECT_EQ(phase1::rows_to_check(3, 10, 10).size(), 3u);
  const auto sampled = phase1::rows_to_check(4096, 4096, 4096);
  EXPECT_EQ(sampled.size(), 64u);
  EXPECT_EQ(sampled.front(), 0);
  EXPECT_EQ(sampled.back(), 4095);
}

TEST(CpuGemm, MatchesTheReferenceForEveryTransposition) {
  const int m = 33, n = 17, k = 65;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = ob::exact_pattern(1, i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = ob::exact_pattern(2, i);
  std::vector<int> rows(m);
  for (int i = 0; i < m; ++i) rows[i] = i;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const phase1::CpuGemmShape shape{m, n, k, ta, tb};
      phase1::cpu_gemm(shape, a.data(), b.data(), c.data());
      const auto ref = phase1::reference_gemm_rows(shape, a.data(), b.data(), rows);
      std::vector<float> expected(ref.begin(), ref.end());
      EXPECT_EQ(ob::compare_exact(c.data(), expected.data(), c.size()).wrong, 0u) << ta << tb;  // integers: exact
    }
  }
  EXPECT_THROW(phase1::cpu_gemm({0, 1, 1}, a.data(), b.data(), c.data()), std::invalid_argument);
}
