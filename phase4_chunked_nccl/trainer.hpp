// Phase 4's step in each mode, on a compute stream and a communication stream, timed with CUDA events:
//  seq:      forward, the whole backward, then every bucket all-reduced (NCCL, comm stream), then the update.
//  overlap:  after each backward step, every bucket that step completes is handed over: an event on the compute
//            stream, the comm stream waits on it, ncclAllReduce in place. The update waits for the last bucket.
//  compute:  the step without communication. comm: the bucket all-reduces alone (on an integer pattern whose exact
//            sum is checked on the device with --check).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/bucket_plan.hpp"
#include "phase4_chunked_nccl/config.hpp"
#include "phase4_chunked_nccl/model.hpp"

namespace phase4 {

struct ModeRun {
  std::string mode;
  std::vector<double> iter_ms;                  // this rank, per timed iteration
  std::vector<double> forward_ms, update_ms;    // per iteration
  std::vector<double> backward_total_ms;        // per iteration: sum of the backward steps' compute-stream times
  std::vector<std::vector<double>> step_ms;     // [backward step][iteration]
  std::vector<std::vector<double>> bucket_ms;   // [bucket][iteration]
  std::vector<ob::TimelineEvent> events;
  bool ranks_agree = true;                      // --check: weight fingerprints equal on every rank after each step
  std::uint64_t wrong = 0;                      // comm --check: elements off the exact pattern sum
  std::string first_wrong;
};

class Trainer {
 public:
  Trainer(const Config& config, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // `steps` > 0: that many untimed steps (for checks) instead of warm-up + timed iterations.
  // Timeline times count from `origin` (host clock, aligned to the mode's first timed GPU event).
  ModeRun run(const std::string& mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin,
              int steps = 0);

  void use_comm(ncclComm_t nccl) { nccl_ = nccl; }
  void reset_weights();
  std::vector<float> download_weights();
  std::uint64_t weight_fingerprint();

 private:
  void step(const std::string& mode, const BucketPlan& plan, struct StepMarks* marks);
  void allreduce(const Bucket& bucket);

  const Config& config_;
  int rank_, ranks_;
  ncclComm_t nccl_;
  MPI_Comm comm_;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t handoff_ = nullptr, comm_done_ = nullptr;
  Mlp* model_ = nullptr;
  ob::DeviceBuffer<unsigned long long> scratch_;
};

}  // namespace phase4
