#include "phase2_omp_overlap/workload.hpp"

#include <chrono>
#include <thread>

namespace phase2 {

SyntheticWorkload::SyntheticWorkload(const Config& config)
    : compute_ms_(config.compute_ms), comm_ms_(config.comm_ms), jitter_(config.jitter), seed_(config.common.seed) {}

double SyntheticWorkload::duration_ms(int kind, int iter, int chunk) const {
  const double nominal = kind == 0 ? compute_ms_ : comm_ms_;
  if (jitter_ == 0.0) return nominal;
  const std::uint64_t index = (static_cast<std::uint64_t>(iter) << 32) ^ (static_cast<std::uint64_t>(chunk) << 1) ^
      static_cast<std::uint64_t>(kind);
  // exact_pattern with range 1000 gives an integer in [-1000, 1000]: u in [-1, 1].
  const double u = ob::exact_pattern(seed_, index, 1000) / 1000.0;
  return nominal * (1.0 + jitter_ * u);
}

namespace {
void wait_ms(double ms) {
  // sleep_until an absolute deadline: the overshoot of one wait does not add to the next.
  std::this_thread::sleep_until(std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms));
}
}  // namespace

void SyntheticWorkload::compute(int iter, int chunk, int part, int) {
  if (part == 0) wait_ms(duration_ms(0, iter, chunk));
}
void SyntheticWorkload::communicate(int iter, int chunk) { wait_ms(duration_ms(1, iter, chunk)); }

RealWorkload::RealWorkload(const Config& config)
    : chunks_(config.chunks), rows_(config.chunk_rows), hidden_(config.hidden), ranks_(config.virtual_ranks),
      threads_(config.compute_threads()) {
  const std::size_t total_rows = static_cast<std::size_t>(chunks_) * rows_;
  const std::size_t h = static_cast<std::size_t>(hidden_);
  a_.resize(total_rows * h);
  b_.resize(h * h);
  for (std::size_t i = 0; i < a_.size(); ++i) a_[i] = ob::exact_pattern(config.common.seed, i);
  for (std::size_t i = 0; i < b_.size(); ++i) b_[i] = ob::exact_pattern(config.common.seed + 1, i);
  reference_.assign(total_rows * h, 0.0f);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < total_rows; ++i) {
    for (std::size_t j = 0; j < h; ++j) {
      std::int64_t sum = 0;
      for (std::size_t k = 0; k < h; ++k) {
        sum += static_cast<std::int64_t>(a_[i * h + k]) * static_cast<std::int64_t>(b_[k * h + j]);
      }
      reference_[i * h + j] = static_cast<float>(sum);
    }
  }
  copies_.assign(static_cast<std::size_t>(ranks_), std::vector<float>(total_rows * h, 0.0f));
}

void RealWorkload::compute(int, int chunk, int part, int parts) {
  const std::size_t h = static_cast<std::size_t>(hidden_);
  const std::size_t first = static_cast<std::size_t>(chunk) * rows_;
  // This share's rows: the chunk's rows cut into `parts` nearly equal runs.
  const std::size_t begin = first + static_cast<std::size_t>(rows_) * part / parts;
  const std::size_t end = first + static_cast<std::size_t>(rows_) * (part + 1) / parts;
  float* out = copies_[0].data();
  for (std::size_t i = begin; i < end; ++i) {
    float* c = out + i * h;
    for (std::size_t j = 0; j < h; ++j) c[j] = 0.0f;
    for (std::size_t k = 0; k < h; ++k) {
      const float a = a_[i * h + k];
      const float* b = b_.data() + k * h;
      for (std::size_t j = 0; j < h; ++j) c[j] += a * b[j];
    }
    // Virtual rank v's gradient differs from rank 0's by v, as each data-parallel rank's does.
    for (int v = 1; v < ranks_; ++v) {
      float* copy = copies_[v].data() + i * h;
      for (std::size_t j = 0; j < h; ++j) copy[j] = c[j] + static_cast<float>(v);
    }
  }
}

void RealWorkload::communicate(int, int chunk) {
  const std::size_t h = static_cast<std::size_t>(hidden_);
  const std::size_t begin = static_cast<std::size_t>(chunk) * rows_ * h;
  const std::size_t end = begin + static_cast<std::size_t>(rows_) * h;
  for (std::size_t e = begin; e < end; ++e) {
    float sum = 0.0f;
    for (int v = 0; v < ranks_; ++v) sum += copies_[v][e];
    for (int v = 0; v < ranks_; ++v) copies_[v][e] = sum;
  }
}

void RealWorkload::prepare_comm_only() {
  for (int v = 0; v < ranks_; ++v) {
    for (std::size_t e = 0; e < reference_.size(); ++e) copies_[v][e] = reference_[e] + static_cast<float>(v);
  }
}

ob::ExactCheck RealWorkload::check(const std::string& mode) const {
  ob::ExactCheck total;
  std::vector<float> expected(reference_.size());
  const bool reduced = mode != "compute";
  for (int v = 0; v < ranks_; ++v) {
    for (std::size_t e = 0; e < expected.size(); ++e) {
      expected[e] = reduced ? static_cast<float>(ranks_) * reference_[e] + static_cast<float>(ranks_ * (ranks_ - 1) / 2)
                            : reference_[e] + static_cast<float>(v);
    }
    const auto check = ob::compare_exact(copies_[v].data(), expected.data(), expected.size());
    if (total.wrong == 0 && check.wrong > 0) total.first = "virtual rank " + std::to_string(v) + ", " + check.first;
    total.wrong += check.wrong;
  }
  return total;
}

std::unique_ptr<Workload> make_workload(const Config& config) {
  if (config.workload == "real") return std::make_unique<RealWorkload>(config);
  return std::make_unique<SyntheticWorkload>(config);
}

}  // namespace phase2
