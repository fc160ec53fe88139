#include <algorithm>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/mpi_check.hpp"
#include "phase4_chunked_nccl/kernels.cuh"
#include "phase4_chunked_nccl/trainer.hpp"

namespace phase4 {

// Indices into the EventLog of one timed step.
struct StepMarks {
  ob::EventLog* log = nullptr;
  int start = -1, forward_end = -1, update_start = -1, end = -1;
  std::vector<int> step_begin, step_end;      // per backward step, compute stream
  std::vector<int> bucket_begin, bucket_end;  // per bucket, comm stream
  int mark(cudaStream_t stream) { return log ? log->record(stream) : -1; }
};

Trainer::Trainer(const Config& config, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm)
    : config_(config), rank_(rank), ranks_(ranks), nccl_(nccl), comm_(comm), scratch_(2) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking,
                                          config.comm_priority == "high" ? greatest : least));
  CUDA_CHECK(cudaEventCreateWithFlags(&handoff_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
  CUBLAS_CHECK(cublasCreate(&cublas_));
  model_ = new Mlp(config, rank, cublas_);
}

Trainer::~Trainer() {
  delete model_;
  if (cublas_) cublasDestroy(cublas_);
  if (handoff_) cudaEventDestroy(handoff_);
  if (comm_done_) cudaEventDestroy(comm_done_);
  if (comm_stream_) cudaStreamDestroy(comm_stream_);
  if (compute_) cudaStreamDestroy(compute_);
}

void Trainer::reset_weights() {
  model_->reset_weights(compute_);
  CUDA_CHECK(cudaStreamSynchronize(compute_));
}

std::vector<float> Trainer::download_weights() {
  std::vector<float> w(model_->elements());
  CUDA_CHECK(cudaMemcpy(w.data(), model_->weights(), w.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return w;
}

std::uint64_t Trainer::weight_fingerprint() {
  CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, sizeof(unsigned long long), compute_));
  fingerprint(model_->weights(), model_->elements(), scratch_.get(), compute_);
  unsigned long long value = 0;
  CUDA_CHECK(cudaMemcpyAsync(&value, scratch_.get(), sizeof value, cudaMemcpyDeviceToHost, compute_));
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  return value;
}

void Trainer::allreduce(const Bucket& bucket) {
  float* data = model_->grads() + bucket.begin;
  NCCL_CHECK(ncclAllReduce(data, data, bucket.size(), ncclFloat, ncclSum, nccl_, comm_stream_));
}

void Trainer::step(const std::string& mode, const BucketPlan& plan, StepMarks* m) {
  const int layers = config_.layers;
  const auto& buckets = plan.buckets;
  auto all_buckets = [&] {
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      m->bucket_begin[b] = m->mark(comm_stream_);
      allreduce(buckets[b]);
      m->bucket_end[b] = m->mark(comm_stream_);
    }
  };
  if (mode == "comm") {
    m->start = m->mark(comm_stream_);
    all_buckets();
    m->end = m->mark(comm_stream_);
    return;
  }
  m->start = m->mark(compute_);
  model_->forward(compute_);
  m->forward_end = m->mark(compute_);
  std::size_t next_bucket = 0;
  for (int s = 0; s < layers; ++s) {
    m->step_begin[s] = s == 0 ? m->forward_end : m->step_end[s - 1];
    model_->backward_step(s, compute_);
    m->step_end[s] = m->mark(compute_);
    if (mode != "overlap") continue;
    for (; next_bucket < buckets.size() && buckets[next_bucket].ready_after == s; ++next_bucket) {
      CUDA_CHECK(cudaEventRecord(handoff_, compute_));
      CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, handoff_, 0));
      m->bucket_begin[next_bucket] = m->mark(comm_stream_);
      allreduce(buckets[next_bucket]);
      m->bucket_end[next_bucket] = m->mark(comm_stream_);
    }
  }
  if (mode == "seq") {
    CUDA_CHECK(cudaEventRecord(handoff_, compute_));
    CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, handoff_, 0));
    all_buckets();
  }
  if (mode == "seq" || mode == "overlap") {
    CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_, comm_done_, 0));
  }
  m->update_start = m->mark(compute_);
  model_->update(config_.lr / static_cast<float>(ranks_), compute_);  // averaged over ranks
  m->end = m->mark(compute_);
}

ModeRun Trainer::run(const std::string& mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin,
                     int steps) {
  double origin_ms = 0;
  ModeRun run;
  run.mode = mode;
  const int layers = config_.layers, nb = static_cast<int>(plan.buckets.size());
  run.step_ms.assign(layers, {});
  run.bucket_ms.assign(nb, {});
  const bool timing = steps <= 0;
  const int total = timing ? config_.common.warmup + config_.common.iters : steps;
  ob::EventLog log;
  std::vector<StepMarks> timed;
  const std::size_t n = model_->elements();
  for (int i = 0; i < total; ++i) {
    const int iter = timing ? i - config_.common.warmup : i;
    if (mode == "comm") fill_rank_pattern(model_->grads(), n, config_.common.seed, rank_, comm_stream_);
    CUDA_CHECK(cudaDeviceSynchronize());
    MPI_CHECK(MPI_Barrier(comm_));  // every iteration starts together; its time is then the slowest rank's
    StepMarks marks;
    marks.step_begin.assign(layers, -1);
    marks.step_end.assign(layers, -1);
    marks.bucket_begin.assign(nb, -1);
    marks.bucket_end.assign(nb, -1);
    if (timing && iter >= 0) {
      marks.log = &log;
      if (log.size() == 0) {  // the origin of this mode's timeline
        log.record(compute_);
        origin_ms = ob::micros_since(origin, ob::SteadyClock::now()) / 1000.0;
      }
    }
    {
      ob::NvtxRange range(mode.c_str());
      step(mode, plan, &marks);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    if (check && mode == "comm") {
      CUDA_CHECK(cudaMemset(scratch_.get(), 0, sizeof(unsigned long long)));
      CUDA_CHECK(cudaMemset(scratch_.get() + 1, 0xff, sizeof(unsigned long long)));
      count_pattern_wrong(model_->grads(), n, config_.common.seed, ranks_, scratch_.get(), scratch_.get() + 1, nullptr);
      const auto counts = scratch_.download();
      if (counts[0] > 0 && run.wrong == 0) {
        run.first_wrong = "iteration " + std::to_string(iter) + ", first wrong index " + std::to_string(counts[1]);
      }
      run.wrong = std::max<std::uint64_t>(run.wrong, counts[0]);
    } else if (check && mode != "compute") {
      const std::uint64_t print = weight_fingerprint();
      std::uint64_t lo = 0, hi = 0;
      MPI_CHECK(MPI_Allreduce(&print, &lo, 1, MPI_UINT64_T, MPI_MIN, comm_));
      MPI_CHECK(MPI_Allreduce(&print, &hi, 1, MPI_UINT64_T, MPI_MAX, comm_));
      run.ranks_agree = run.ranks_agree && lo == hi;
    }
    if (marks.log) timed.push_back(std::move(marks));
  }

  const std::string compute_lane = mode + ":compute", comm_lane = mode + ":comm";
  auto event = [&](const std::string& lane, const char* name, int iter, int chunk, int from, int to) {
    run.events.push_back({rank_, lane, name, iter, chunk, 1000.0 * (origin_ms + log.ms_since_origin(from)),
                          1000.0 * (origin_ms + log.ms_since_origin(to))});
    return log.ms_between(from, to);
  };
  for (std::size_t it = 0; it < timed.size(); ++it) {
    const StepMarks& m = timed[it];
    const int iter = static_cast<int>(it);
    run.iter_ms.push_back(log.ms_between(m.start, m.end));
    if (mode != "comm") {
      run.forward_ms.push_back(event(compute_lane, "forward", iter, -1, m.start, m.forward_end));
      double backward = 0;
      for (int s = 0; s < layers; ++s) {
        const double ms = event(compute_lane, "backward", iter, layers - s, m.step_begin[s], m.step_end[s]);
        run.step_ms[s].push_back(ms);
        backward += ms;
      }
      run.backward_total_ms.push_back(backward);
      run.update_ms.push_back(event(compute_lane, "update", iter, -1, m.update_start, m.end));
    }
    if (mode != "compute") {
      for (int b = 0; b < nb; ++b) {
        run.bucket_ms[b].push_back(event(comm_lane, "allreduce", iter, b, m.bucket_begin[b], m.bucket_end[b]));
      }
    }
  }
  return run;
}

}  // namespace phase4
