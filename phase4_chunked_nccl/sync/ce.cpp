// Strategy ce (sync/gradient_sync.hpp): an all-reduce that leaves the SMs to the GEMMs. NCCL 2.28 runs all-to-all and
// all-gather on the GPU's copy engines when the buffers are symmetric windows and the communicator's CTA policy is
// NCCL_CTA_POLICY_ZERO (its log says "Init CE"); a reduction has no copy-engine form, so per bucket of n elements
// (n a multiple of ranks * 64; the plan is aligned, the buffers padded):
//   1. ncclAlltoAll (comm stream): slice r of every rank's bucket lands on rank r, the ranks' slices in rank order;
//   2. sum_slices: a kernel sums them, in rank order, into this rank's slice of `out`;
//   3. ncclAllGather in place on `out` (comm stream): every rank gets every reduced slice.
// Where the sum runs decides whether the comm stream needs SMs. Run whole (seq, comm-only), all three go on the comm
// stream. Overlapped, a kernel on the comm stream waits for SMs the GEMMs hold (seen: the buckets' communication
// stretched from 7 ms alone to 33 ms beside 4096-wide GEMMs), so the sum of a bucket runs on the compute stream after
// the backward step following the one that handed the bucket over (its all-to-all has had a step to land), and the
// all-gather waits for it: the comm stream then holds copy-engine work only.
// The all-gathers go on a stream of their own: on the comm stream each would hold back the next buckets' all-to-alls
// until the compute stream reached its sum (seen in the Gantt charts: all-to-alls spaced by the backward steps).
// finish() joins that stream back into the comm stream, which the update waits for.
// Every rank's sum of a slice is the same bits (one rank computes it), so weights stay identical across ranks.
#include "phase4_chunked_nccl/sync/registry.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include <deque>
#include <vector>

#include "common/cuda/handles.hpp"
#include "phase4_chunked_nccl/sync/kernels.cuh"
#include "phase4_chunked_nccl/sync/comm_buffer.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"

namespace phase4 {
namespace {

constexpr std::uint64_t kSliceAlignment = 64;  // elements per rank slice are a multiple of this (256 bytes)

class CopyEngineAllReduce final : public GradientSync {
 public:
  explicit CopyEngineAllReduce(const SyncContext& context)
      : GradientSync(context.nccl), rank_(context.rank), ranks_(context.ranks), layout_(context.layout),
        padded_((context.elements() + unit() - 1) / unit() * unit()), grads_(padded_, context.nccl),
        recv_(padded_, context.nccl), out_(padded_, context.nccl), gather_(ob::make_stream()),
        gathered_(ob::make_sync_event()) {}

  float* gradient() override { return grads_.get(); }

  BucketPlan adapt(const BucketPlan& plan) const override { return align_plan(plan, layout_, unit()); }

  void communicate(const Bucket& bucket, cudaStream_t comm) override {
    Pending pending{bucket, event(2 * opened_), event(2 * opened_ + 1)};
    ++opened_;
    collectives().all_to_all(grads_.get() + bucket.begin, recv_.get() + bucket.begin, slice(bucket), comm);
    CUDA_CHECK(cudaEventRecord(pending.exchanged, comm));
    open_.push_back(pending);
  }

  void after_step(int step, cudaStream_t compute, cudaStream_t comm) override {
    while (!open_.empty() && open_.front().bucket.ready_after < step) close_front(compute, comm);
  }

  void finish(cudaStream_t compute, cudaStream_t comm) override {
    while (!open_.empty()) close_front(compute, comm);
    // All-gathers ran on their own stream: the comm stream (and the update) waits for them. None did (nothing was
    // open: every bucket carried to the next step), no wait: captured, it would depend on work outside the graph.
    if (gathering_) {
      CUDA_CHECK(cudaEventRecord(gathered_, gather_));
      CUDA_CHECK(cudaStreamWaitEvent(comm, gathered_, 0));
      gathering_ = false;
    }
    opened_ = 0;  // every event's waits are enqueued: the next step reuses them
  }

  void update_part(float* weights, float scale, std::uint64_t begin, std::uint64_t n, cudaStream_t compute) override {
    sgd(weights + begin, out_.get() + begin, scale, n, compute);
  }

  const float* reduced(cudaStream_t) override { return out_.get(); }

 private:
  struct Pending {
    Bucket bucket;
    cudaEvent_t exchanged, summed;
  };

  std::uint64_t unit() const { return kSliceAlignment * static_cast<std::uint64_t>(ranks_); }
  // The last bucket may end off the unit: it runs to the padding's end (zeros on every rank).
  std::uint64_t slice(const Bucket& bucket) const { return (bucket.size() + unit() - 1) / unit() * unit() / ranks_; }
  // Ordering events, made on first use and reused every step (none is made during a graph capture's replays).
  cudaEvent_t event(std::size_t index) {
    while (events_.size() <= index) events_.push_back(ob::make_sync_event());
    return events_[index];
  }

  // Steps 2 and 3 of the oldest open bucket: the sum on `compute` (after its all-to-all), the all-gather on `comm`.
  void close_front(cudaStream_t compute, cudaStream_t comm) {
    const Pending pending = open_.front();
    open_.pop_front();
    const std::uint64_t n = slice(pending.bucket);
    float* mine = out_.get() + pending.bucket.begin + rank_ * n;
    if (compute != comm) CUDA_CHECK(cudaStreamWaitEvent(compute, pending.exchanged, 0));
    sum_slices(recv_.get() + pending.bucket.begin, n, ranks_, mine, n, compute);
    cudaStream_t gather = comm;
    if (compute != comm) {
      gather = gather_;
      gathering_ = true;
      CUDA_CHECK(cudaEventRecord(pending.summed, compute));
      CUDA_CHECK(cudaStreamWaitEvent(gather, pending.summed, 0));
    }
    collectives().all_gather(mine, out_.get() + pending.bucket.begin, n, gather);
  }

  int rank_, ranks_;
  GradientLayout layout_;
  std::uint64_t padded_;
  CommBuffer<float> grads_, recv_, out_;
  ob::CudaStream gather_;  // overlapped runs: the all-gathers
  ob::CudaEvent gathered_;
  std::vector<ob::CudaEvent> events_;
  std::deque<Pending> open_;  // buckets whose all-to-all is enqueued and whose sum is not
  std::size_t opened_ = 0;  // buckets opened since the last finish(): each has its own two events
  bool gathering_ = false;  // an all-gather went on gather_ since the last finish()
};

std::unique_ptr<GradientSync> make_copy_engine(const SyncContext& context) {
  return std::make_unique<CopyEngineAllReduce>(context);
}

}  // namespace
}  // namespace phase4
#endif

namespace phase4 {
namespace {

SyncRow copy_engine_row() {
  SyncRow row;
  row.name = "ce";
  row.help =
      "zero-SM: copy-engine all-to-all + a small sum kernel + copy-engine all-gather on symmetric windows "
      "(CTA policy zero; fp32)";
  row.reference = "nccl";
  row.buffers = 3;  // the gradient, the received slices, the reduced gradient
  row.make = OB_SYNC_FACTORY(make_copy_engine);
  return on_copy_engines(row);
}

const RegisterSync kCopyEngine(copy_engine_row());
const RegisterSync kCopyEngineCarried(carrying(copy_engine_row()));

}  // namespace
}  // namespace phase4
