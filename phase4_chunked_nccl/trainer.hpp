// Phase 4's step in each mode, on a compute stream and a communication stream, timed with CUDA events:
//  seq:      forward, the whole backward, then every bucket all-reduced (NCCL, comm stream), then the update.
//  overlap:  after each backward step, every bucket that step completes is handed over: an event on the compute
//            stream, the comm stream waits on it, ncclAllReduce in place. The update waits for the last bucket.
//  compute:  the step without communication. comm: the bucket all-reduces alone (on an integer pattern whose exact
//            sum is checked on the device with --check).
// With --accum-steps K the first K - 1 micro-steps (forward and backward) only accumulate gradients; the last one
// is timed and overlapped as above. With --comm-dtype bf16 each bucket is cast into a bf16 buffer (the wire) on the
// compute stream right after the backward step that completes it, in every mode (making the gradient is compute);
// the comm stream all-reduces the wire in bf16, and the update reads the wire (the cast back fused into it). With
// --graph each mode's step is captured once as a CUDA graph (both streams, NCCL calls and timing events included)
// and replayed every iteration.
#pragma once

#include <cuda_bf16.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/cuda/power_monitor.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/bucket_plan.hpp"
#include "phase4_chunked_nccl/config.hpp"
#include "phase4_chunked_nccl/model.hpp"

namespace phase4 {

struct ModeRun {
  std::string mode;
  std::vector<double> iter_ms;                  // this rank, per timed iteration
  std::vector<double> forward_ms, update_ms;    // per iteration (forward: from the step's start, so with K > 1
                                                // it holds the K - 1 accumulation micro-steps too)
  std::vector<double> backward_total_ms;        // per iteration: sum of the backward steps' compute-stream times
  std::vector<std::vector<double>> step_ms;     // [backward step][iteration]
  std::vector<std::vector<double>> bucket_ms;   // [bucket][iteration]
  std::vector<ob::TimelineEvent> events;
  bool ranks_agree = true;                      // --check: weight fingerprints equal on every rank after each step
  std::uint64_t wrong = 0;                      // comm --check: elements off the exact pattern sum
  std::string first_wrong;
  double energy_j = 0;                          // --power: this GPU's energy over the timed iterations (NaN: none,
                                                // or they lasted less than kShortestEnergyWindowS)
  double timed_s = 0;                           // host time of the timed iterations (the barriers between included)
};

// Timed iterations shorter than this in all get no energy figure: the energy counter's steps would dominate it.
constexpr double kShortestEnergyWindowS = 0.5;

class Trainer {
 public:
  // `power` (may be null) gives the energy of each mode's timed iterations.
  Trainer(const Config& config, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm,
          const ob::PowerMonitor* power = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // `steps` > 0: that many untimed steps (for checks) instead of warm-up + timed iterations. `eager`: no CUDA graph
  // even with --graph (the reference of the graph check). Timeline times count from `origin` (host clock, aligned
  // to the mode's first timed GPU event).
  ModeRun run(const std::string& mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin,
              int steps = 0, bool eager = false);

  // --comm-dtype bf16: the relative error (norm) of one step's all-reduced gradient against the same gradient
  // all-reduced in fp32. Leaves the weights one compute step further (reset them afterwards).
  double comm_gradient_error(const BucketPlan& plan);

  ncclComm_t comm() const { return nccl_; }
  void reset_weights();
  std::vector<float> download_weights();
  std::uint64_t weight_fingerprint();

 private:
  void step(const std::string& mode, const BucketPlan& plan, struct StepMarks* marks);
  void encode(const Bucket& bucket, cudaStream_t stream);  // bf16: the bucket's gradient onto the wire; fp32: nothing
  void allreduce(const Bucket& bucket);                     // on the comm stream, in place on the wire (or gradient)
  void update(cudaStream_t stream);                         // SGD with the all-reduced gradient averaged over ranks

  const Config& config_;
  int rank_, ranks_;
  bool bf16_;  // --comm-dtype bf16
  ncclComm_t nccl_;
  MPI_Comm comm_;
  const ob::PowerMonitor* power_;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t handoff_ = nullptr, comm_done_ = nullptr;
  Mlp* model_ = nullptr;
  ob::DeviceBuffer<unsigned long long> scratch_;
  ob::DeviceBuffer<__nv_bfloat16> wire_;  // --comm-dtype bf16: the gradient as it travels
  ob::DeviceBuffer<char> cublas_workspace_;
};

}  // namespace phase4
