// C++ (no CUDA) side of phase 1's kernels, shared with phase 3's CPU path:
//  - the double-precision reference every GPU result is checked against, on all rows or on a sample of them;
//  - an OpenMP fp32 GEMM for ranks that have no GPU.
// Shapes follow gemm.cuh: row-major C = op(A) · op(B).
#pragma once

#include <cstddef>
#include <vector>

namespace phase1 {

struct CpuGemmShape {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};

// Rows `rows` of op(A) · op(B) in double: rows.size() x n values, row after row.
std::vector<double> reference_gemm_rows(const CpuGemmShape& shape, const float* a, const float* b,
                                        const std::vector<int>& rows);

// All rows when m * n * k is at most `budget` multiply-adds; otherwise `sample` rows spread evenly, first and last
// included (a check at 4096^3 would otherwise take minutes on the CPU).
std::vector<int> rows_to_check(int m, int n, int k, double budget = 3e8, int sample = 64);

// C = op(A) · op(B) in fp32 with OpenMP over rows of C.
void cpu_gemm(const CpuGemmShape& shape, const float* a, const float* b, float* c);

}  // namespace phase1
