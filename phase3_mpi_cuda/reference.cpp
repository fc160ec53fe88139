#include "phase3_mpi_cuda/reference.hpp"

#include "phase3_mpi_cuda/backend.hpp"

namespace phase3 {
namespace {

// C (m x n) = A (m x k) · B (k x n), all row-major doubles.
void gemm_double(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& c, int m, int n,
                 int k) {
  c.assign(static_cast<std::size_t>(m) * n, 0.0);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      const double av = a[static_cast<std::size_t>(i) * k + p];
      for (int j = 0; j < n; ++j) c[static_cast<std::size_t>(i) * n + j] += av * b[static_cast<std::size_t>(p) * n + j];
    }
  }
}

}  // namespace

std::vector<double> reference_weights(const Config& config, int steps) {
  const ShardData all = make_shard(config, {0, config.batch});
  const int b = config.batch, in = config.in, out = config.out;
  const std::vector<double> x(all.x.begin(), all.x.end());
  const std::vector<double> xt(all.xt.begin(), all.xt.end());
  std::vector<double> w(all.w0.begin(), all.w0.end()), t, y, grad;
  gemm_double(x, std::vector<double>(all.w_star.begin(), all.w_star.end()), t, b, out, in);
  const double scale = 2.0 / (static_cast<double>(b) * out);
  for (int s = 0; s < steps; ++s) {
    gemm_double(x, w, y, b, out, in);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = scale * (y[i] - t[i]);
    gemm_double(xt, y, grad, in, out, b);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= static_cast<double>(config.lr) * grad[i];
  }
  return w;
}

}  // namespace phase3
