// The interference map (--mode interference; METRICS.md, "The interference map"): Trainer::interference, a
// backward GEMM of the model's shape in a loop on the compute stream and the strategy's collective of one bucket in a
// loop on the comm stream, alone and at once.
#include <algorithm>
#include <cmath>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/iteration.hpp"
#include "common/mpi_check.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/schedule/checks.cuh"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

namespace phase4 {

// The GPU sleep that releases both loops of an interference pass at once, and gives the host a head start.
constexpr double kInterferenceGateMs = 2;
// How many times its length alone a loop runs when it covers the other: a covered loop slowed down more than this
// many times outlasts it (the row's `covered` is then 0).
constexpr double kInterferenceCover = 3;

Interference Trainer::interference(std::uint64_t elements, double window_ms, int passes) {
  Interference result;
  BucketPlan one;
  one.elements = model_->elements();
  one.buckets = {{0, std::min(elements, one.elements), 0}};
  const Bucket bucket = sync_->adapt(one).buckets.front();
  result.elements = bucket.size();
  // The GEMM's operands (uniform values, never zeros) and the bucket's data (the comm mode's rank pattern; summed in
  // place pass after pass its values grow, which does not change what a sum costs).
  const int h = spec_.model.hidden, b = spec_.model.batch;
  ob::DeviceBuffer<float> a(static_cast<std::size_t>(b) * h), dz(a.size()), dw(static_cast<std::size_t>(h) * h);
  fill_uniform(a.get(), a.size(), spec_.model.seed + 11u, 1.0f, compute_);
  fill_uniform(dz.get(), dz.size(), spec_.model.seed + 12u, 1.0f, compute_);
  fill_rank_pattern(sync_->gradient(), model_->elements(), spec_.model.seed, rank_, comm_stream_);
  sync_->bucket_ready(bucket, comm_stream_);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto gemm = [&] {
    ob::cublas_gemm(cublas_, spec_.model.tf32, {h, h, b, true, false}, a.get(), dz.get(), dw.get(), compute_);
  };
  const auto collective = [&] { sync_->synchronise(bucket, comm_stream_); };
  // One pass: `gemms` GEMMs and `comms` collectives released together by a gate (2 ms of GPU sleep on the compute
  // stream, the comm stream waiting for its end) and queued interleaved, each loop in step with its share of the
  // pass, so the host keeps both streams fed (a launch queue holds only so much: queueing one loop whole first
  // would block the host and starve the other); ms per GEMM and per collective, and whether the GEMM loop ended
  // first.
  struct Pass {
    double gemm_ms = 0, comm_ms = 0;
    bool gemm_first = false;
  };
  ob::EventLog log;
  const auto pass = [&](int gemms, int comms) {
    MPI_CHECK(MPI_Barrier(comm_));
    log.clear();
    gpu_sleep(kInterferenceGateMs, compute_);
    const int gate = log.record(compute_);
    CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, log.event(gate), 0));
    for (int g = 0, c = 0; g < gemms || c < comms;) {
      if (c >= comms || (g < gemms && static_cast<double>(g) * comms <= static_cast<double>(c) * gemms)) {
        gemm();
        ++g;
      } else {
        collective();
        ++c;
      }
    }
    const int gemm_end = log.record(compute_), comm_end = log.record(comm_stream_);
    CUDA_CHECK(cudaDeviceSynchronize());
    return Pass{gemms > 0 ? log.ms_between(gate, gemm_end) / gemms : 0.0,
                comms > 0 ? log.ms_between(gate, comm_end) / comms : 0.0, log.ms_between(gemm_end, comm_end) >= 0};
  };
  const auto count = [&](double per_op_ms, double factor) {
    return static_cast<int>(std::clamp(std::ceil(factor * window_ms / std::max(per_op_ms, 1e-3)), 3.0, 100000.0));
  };
  // A first look at each alone sizes the loops (after a warm-up of clocks, NCCL's connections, cuBLAS's choice).
  pass(3, 0);
  pass(0, 3);
  // Every rank queues as many collectives (the slowest rank's guesses), or NCCL would wait for ever.
  double guesses[2] = {pass(3, 0).gemm_ms, pass(0, 3).comm_ms};
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, guesses, 2, MPI_DOUBLE, MPI_MAX, comm_));
  const double gemm_guess = guesses[0], comm_guess = guesses[1];
  // The timed passes through the iteration protocol (a barrier, the watchdog's progress, every sample kept): each
  // iteration is one pass of each loop alone and each inside the other, in that order.
  ob::LoopHooks hooks;
  hooks.step = [&](const ob::Iteration&) {
    result.gemm_ms.push_back(pass(count(gemm_guess, 1), 0).gemm_ms);
    result.comm_ms.push_back(pass(0, count(comm_guess, 1)).comm_ms);
    const Pass inside_comm = pass(count(gemm_guess, 1), count(comm_guess, kInterferenceCover));
    result.gemm_overlap_ms.push_back(inside_comm.gemm_ms);
    const Pass inside_gemm = pass(count(gemm_guess, kInterferenceCover), count(comm_guess, 1));
    result.comm_overlap_ms.push_back(inside_gemm.comm_ms);
    result.covered = result.covered && inside_comm.gemm_first && !inside_gemm.gemm_first;
  };
  ob::run_iterations({kInterferenceMode, 0, passes, 0, comm_}, hooks);
  return result;
}

}  // namespace phase4
