#include "phase1_cuda_baseline/cpu_gemm.hpp"

#include <algorithm>
#include <stdexcept>

namespace phase1 {
namespace {
inline float op_at(const float* x, bool trans, int row, int col, int rows, int cols) {
  return trans ? x[static_cast<std::size_t>(col) * rows + row] : x[static_cast<std::size_t>(row) * cols + col];
}
}  // namespace

std::vector<double> reference_gemm_rows(const CpuGemmShape& s, const float* a, const float* b,
                                        const std::vector<int>& rows) {
  std::vector<double> out(rows.size() * static_cast<std::size_t>(s.n), 0.0);
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int row = rows[r];
    if (row < 0 || row >= s.m) continue;
    double* c = out.data() + r * s.n;
    for (int i = 0; i < s.k; ++i) {
      const double av = op_at(a, s.trans_a, row, i, s.m, s.k);
      for (int j = 0; j < s.n; ++j) c[j] += av * op_at(b, s.trans_b, i, j, s.k, s.n);
    }
  }
  return out;
}

std::vector<int> rows_to_check(int m, int n, int k, double budget, int sample) {
  std::vector<int> rows;
  if (static_cast<double>(m) * n * k <= budget || m <= sample) {
    for (int i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  for (int i = 0; i < sample; ++i) rows.push_back(static_cast<int>(static_cast<long long>(i) * (m - 1) / (sample - 1)));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

void cpu_gemm(const CpuGemmShape& s, const float* a, const float* b, float* c) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("cpu_gemm: sizes must be positive");
#pragma omp parallel for schedule(static)
  for (int row = 0; row < s.m; ++row) {
    float* out = c + static_cast<std::size_t>(row) * s.n;
    std::fill(out, out + s.n, 0.0f);
    for (int i = 0; i < s.k; ++i) {
      const float av = op_at(a, s.trans_a, row, i, s.m, s.k);
      if (!s.trans_b) {
        const float* brow = b + static_cast<std::size_t>(i) * s.n;
        for (int j = 0; j < s.n; ++j) out[j] += av * brow[j];
      } else {
        for (int j = 0; j < s.n; ++j) out[j] += av * b[static_cast<std::size_t>(j) * s.k + i];
      }
    }
  }
}

}  // namespace phase1
