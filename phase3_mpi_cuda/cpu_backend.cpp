// The CPU backend: phase 1's OpenMP fp32 GEMM on the compute team, gradients in host memory.
#include <omp.h>

#include <cmath>

#include "common/verify.hpp"
#include "phase1_cuda_baseline/cpu_gemm.hpp"
#include "phase3_mpi_cuda/backend.hpp"

namespace phase3 {

ShardData make_shard(const Config& config, Range rows) {
  ShardData data;
  data.rows = rows;
  const std::size_t in = config.in, out = config.out;
  const std::size_t r = static_cast<std::size_t>(rows.size());
  data.x = ob::uniform_values(r * in, config.common.seed, 1.0f, static_cast<std::size_t>(rows.begin) * in);
  data.xt.resize(data.x.size());
  for (std::size_t row = 0; row < r; ++row) {
    for (std::size_t i = 0; i < in; ++i) data.xt[i * r + row] = data.x[row * in + i];
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(config.in));
  data.w0 = ob::uniform_values(in * out, config.common.seed + 1, scale);
  data.w_star = ob::uniform_values(in * out, config.common.seed + 2, scale);
  return data;
}

namespace {

class CpuBackend : public Backend {
 public:
  CpuBackend(const Config& config, const ShardData& data)
      : in_(config.in), out_(config.out), rows_(data.rows.size()), lr_(config.lr),
        scale_(2.0f / (static_cast<float>(config.batch) * config.out)), threads_(config.compute_threads()), x_(data.x),
        xt_(data.xt), w_(data.w0), t_(static_cast<std::size_t>(rows_) * out_), y_(t_.size()), dy_(t_.size()),
        grad_(static_cast<std::size_t>(in_) * out_) {
    if (rows_ > 0) phase1::cpu_gemm({rows_, out_, in_}, x_.data(), data.w_star.data(), t_.data());
  }

  std::string description() const override { return "cpu (" + std::to_string(threads_) + " OpenMP threads)"; }

  void forward() override {
    if (rows_ == 0) return;
    omp_set_num_threads(threads_);
    phase1::cpu_gemm({rows_, out_, in_}, x_.data(), w_.data(), y_.data());
    for (std::size_t i = 0; i < y_.size(); ++i) dy_[i] = scale_ * (y_[i] - t_[i]);
  }

  void launch_chunk(int, Range rows) override {
    if (rows.size() == 0) return;  // more chunks than rows of dW
    float* dst = grad_.data() + static_cast<std::size_t>(rows.begin) * out_;
    if (rows_ == 0) {  // a rank without data contributes a zero gradient
      std::fill(dst, dst + static_cast<std::size_t>(rows.size()) * out_, 0.0f);
      return;
    }
    omp_set_num_threads(threads_);
    phase1::cpu_gemm({rows.size(), out_, rows_}, xt_.data() + static_cast<std::size_t>(rows.begin) * rows_, dy_.data(),
                     dst);
  }
  void wait_chunk(int, const std::function<void()>&) override {}  // launch_chunk computed it

  float* comm_buffer() override { return grad_.data(); }
  void write_comm(const std::vector<float>& values) override { grad_ = values; }
  std::vector<float> read_comm() override { return grad_; }
  void update() override {
    const long n = static_cast<long>(w_.size());
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (long i = 0; i < n; ++i) w_[i] -= lr_ * grad_[i];
  }
  std::vector<float> weights() override { return w_; }
  void set_weights(const std::vector<float>& w) override { w_ = w; }

 private:
  int in_, out_, rows_;
  float lr_, scale_;
  int threads_;
  std::vector<float> x_, xt_, w_, t_, y_, dy_, grad_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Config& config, const ShardData& data) {
  return std::make_unique<CpuBackend>(config, data);
}

}  // namespace phase3
