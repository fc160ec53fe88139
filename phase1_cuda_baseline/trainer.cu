#include <cmath>
#include <memory>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/nvtx.hpp"
#include "common/iteration.hpp"
#include "common/watchdog.hpp"
#include "phase1_cuda_baseline/cpu_gemm.hpp"
#include "phase1_cuda_baseline/elementwise.cuh"
#include "phase1_cuda_baseline/trainer.hpp"

namespace phase1 {

const std::vector<std::string> kStepKernels = {"forward", "loss_grad", "backward", "sgd"};

struct Trainer::Buffers {
  ob::DeviceBuffer<float> x, w, w_star, dw, y, t, dy;
  ob::DeviceBuffer<double> loss;
};

Trainer::Trainer(const Config& config) : config_(config) {
  const std::size_t b = config.batch, i = config.in, o = config.out;
  const bool managed = config.memory == "managed";
  stream_ = ob::make_stream();
  ob::name_stream(stream_, "phase1 stream");
  cublas_ = ob::make_cublas();
  buffers_.reset(new Buffers{ob::DeviceBuffer<float>(b * i, managed), ob::DeviceBuffer<float>(i * o, managed),
                             ob::DeviceBuffer<float>(i * o, managed), ob::DeviceBuffer<float>(i * o, managed),
                             ob::DeviceBuffer<float>(b * o, managed), ob::DeviceBuffer<float>(b * o, managed),
                             ob::DeviceBuffer<float>(b * o, managed), ob::DeviceBuffer<double>(1, managed)});
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(config.in));
  x_ = ob::uniform_values(b * i, config.common.seed, 1.0f);
  w0_ = ob::uniform_values(i * o, config.common.seed + 1, w_scale);
  buffers_->x.upload(x_);
  buffers_->w_star.upload(ob::uniform_values(i * o, config.common.seed + 2, w_scale));
  // The target t = x·W* (fp32 cuBLAS): a loss that can reach zero.
  gemm(GemmKernel::kCublas, cublas_, false, {config.batch, config.out, config.in}, buffers_->x.get(),
       buffers_->w_star.get(), buffers_->t.get(), stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Trainer::~Trainer() = default;

double Trainer::tolerance(GemmKernel kernel) const {
  return kernel == GemmKernel::kCublas && config_.tf32 ? 1e-2 : 1e-5;
}

void Trainer::step(GemmKernel kernel, bool tf32, ob::EventLog* log, std::vector<int>* marks) {
  Buffers& d = *buffers_;
  const std::size_t n_out = static_cast<std::size_t>(config_.batch) * config_.out;
  const std::size_t n_w = static_cast<std::size_t>(config_.in) * config_.out;
  const GemmShape forward{config_.batch, config_.out, config_.in, false, false};
  const GemmShape backward{config_.in, config_.out, config_.batch, true, false};  // dW = xᵀ·dY
  CUDA_CHECK(cudaMemsetAsync(d.loss.get(), 0, sizeof(double), stream_));
  auto mark = [&] {
    if (log) marks->push_back(log->record(stream_));
  };
  mark();
  {
    ob::NvtxRange range("forward");
    gemm(kernel, cublas_, tf32, forward, d.x.get(), d.w.get(), d.y.get(), stream_);
  }
  mark();
  {
    ob::NvtxRange range("loss_grad");
    mse_loss_grad(d.y.get(), d.t.get(), d.dy.get(), d.loss.get(), n_out, stream_);
  }
  mark();
  {
    ob::NvtxRange range("backward");
    gemm(kernel, cublas_, tf32, backward, d.x.get(), d.dy.get(), d.dw.get(), stream_);
  }
  mark();
  {
    ob::NvtxRange range("sgd");
    sgd_update(d.w.get(), d.dw.get(), config_.learning_rate(), n_w, stream_);
  }
  mark();
}

void Trainer::check_first_step(VariantResult& result) {
  // The first step's forward output and dW against the CPU double reference (on sampled rows for large sizes),
  // on poisoned outputs so an element no thread writes cannot pass.
  ob::progress_note("the first step's check");
  Buffers& d = *buffers_;
  const std::size_t n_out = static_cast<std::size_t>(config_.batch) * config_.out;
  const std::size_t n_w = static_cast<std::size_t>(config_.in) * config_.out;
  fill(d.y.get(), NAN, n_out, stream_);
  fill(d.dw.get(), NAN, n_w, stream_);
  step(result.kernel, result.tf32, nullptr, nullptr);
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  const auto y = d.y.download(), dy = d.dy.download(), dw = d.dw.download();
  const auto rows_y = rows_to_check(config_.batch, config_.out, config_.in);
  const auto ref_y = reference_gemm_rows({config_.batch, config_.out, config_.in}, x_.data(), w0_.data(), rows_y);
  std::vector<float> got_y;
  for (int r : rows_y)
    got_y.insert(got_y.end(), y.begin() + std::size_t(r) * config_.out, y.begin() + std::size_t(r + 1) * config_.out);
  result.forward_check = ob::compare_relative(got_y.data(), ref_y.data(), ref_y.size());
  const auto rows_w = rows_to_check(config_.in, config_.out, config_.batch);
  const auto ref_w =
      reference_gemm_rows({config_.in, config_.out, config_.batch, true, false}, x_.data(), dy.data(), rows_w);
  std::vector<float> got_w;
  for (int r : rows_w)
    got_w.insert(got_w.end(), dw.begin() + std::size_t(r) * config_.out, dw.begin() + std::size_t(r + 1) * config_.out);
  result.backward_check = ob::compare_relative(got_w.data(), ref_w.data(), ref_w.size());
  result.checked = true;
  d.w.upload(w0_);  // the check's SGD step is undone: every variant trains from the same weights
}

VariantResult Trainer::run(GemmKernel kernel) {
  VariantResult result;
  result.kernel = kernel;
  result.tf32 = kernel == GemmKernel::kCublas && config_.tf32;
  Buffers& d = *buffers_;
  const std::size_t n_out = static_cast<std::size_t>(config_.batch) * config_.out;
  d.w.upload(w0_);
  if (config_.common.check) check_first_step(result);

  const ob::LoopPlan plan = ob::loop_plan(ob::Mode::kSeq, config_.common);
  // One loss per step run: warm-up goes on until steady (common/iteration.hpp), at most max_warmup(plan) steps.
  const ob::PinnedArray<double> loss_pinned =
      ob::make_pinned<double>(ob::max_warmup(plan) + ob::most_timed_iters(plan.iters, plan.min_time_ms));
  double* loss_host = loss_pinned.get();
  int steps_run = 0;
  // The common protocol (common/iteration.hpp); the step's time is the CUDA events' span of its four kernels.
  result.kernel_ms.assign(kStepKernels.size(), {});
  const std::string lane = std::string(gemm_kernel_name(kernel)) + (result.tf32 ? "-tf32" : "") + ":stream 0";
  ob::EventLog log;
  const int origin = log.record(stream_);
  std::vector<int> marks;
  ob::LoopHooks hooks;
  hooks.step = [&](const ob::Iteration& it) {
    ob::NvtxRange range(it.timed ? "phase1 step" : "phase1 warm-up step");
    marks.clear();
    step(kernel, result.tf32, it.timed ? &log : nullptr, &marks);
    CUDA_CHECK(cudaMemcpyAsync(loss_host + it.index, d.loss.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_));
    steps_run = it.index + 1;
  };
  hooks.elapsed_ms = [&](const ob::Iteration& it) -> double {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (!it.timed) return 0.0;
    for (std::size_t k = 0; k < kStepKernels.size(); ++k) {
      result.kernel_ms[k].push_back(log.ms_between(marks[k], marks[k + 1]));
      result.events.push_back({0, lane, kStepKernels[k], it.iter, -1,
                               1000.0 * (origin_offset_ms_ + log.ms_between(origin, marks[k])),
                               1000.0 * (origin_offset_ms_ + log.ms_between(origin, marks[k + 1]))});
    }
    return log.ms_between(marks[0], marks[kStepKernels.size()]);
  };
  result.iter_ms = ob::run_iterations(plan, hooks);
  origin_offset_ms_ += log.ms_between(origin, marks.back());
  for (int it = 0; it < steps_run; ++it) result.loss.push_back(loss_host[it] / static_cast<double>(n_out));
  return result;
}

}  // namespace phase1
