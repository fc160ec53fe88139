// Phase 1's training loop, fully sequential on one stream: forward y = x·W, MSE loss and dY = 2(y - t)/N,
// backward dW = xᵀ·dY, SGD W -= lr·dW. Every kernel is bracketed by CUDA events on that stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "common/cuda/event_timer.hpp"
#include "common/cuda/handles.hpp"
#include "common/timeline.hpp"
#include "common/verify.hpp"
#include "phase1_cuda_baseline/config.hpp"
#include "phase1_cuda_baseline/gemm.cuh"

namespace phase1 {

extern const std::vector<std::string> kStepKernels;  // forward, loss_grad, backward, sgd

struct VariantResult {
  GemmKernel kernel;
  bool tf32 = false;
  std::vector<std::vector<double>> kernel_ms;  // [step kernel][timed iteration]
  std::vector<double> iter_ms;  // first event to last event of each timed iteration
  std::vector<double> loss;  // loss of every iteration, warm-up included
  bool checked = false;
  ob::RelativeCheck forward_check, backward_check;  // first step against the CPU double reference
  std::vector<ob::TimelineEvent> events;
};

// Everything one run shares: the stream, the cuBLAS handle, the data. Constructed on the current device.
class Trainer {
 public:
  explicit Trainer(const Config& config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains from the same initial weights with `kernel`; times warm-up + iters steps.
  VariantResult run(GemmKernel kernel);

  double tolerance(GemmKernel kernel) const;

 private:
  struct Buffers;
  // One step's four kernels on the stream; with `log`, an event before each and after the last (into `marks`).
  void step(GemmKernel kernel, bool tf32, ob::EventLog* log, std::vector<int>* marks);
  // The first step's forward and dW against the CPU reference, its update undone (--check).
  void check_first_step(VariantResult& result);

  const Config& config_;
  ob::CudaStream stream_;
  ob::CublasHandle cublas_;
  std::unique_ptr<Buffers> buffers_;
  std::vector<float> x_, w0_;
  double origin_offset_ms_ = 0;  // keeps variants apart on the timeline
};

}  // namespace phase1
