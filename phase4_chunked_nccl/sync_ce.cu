// Strategy ce (gradient_sync.hpp): an all-reduce that leaves the SMs to the GEMMs. NCCL 2.28 runs all-to-all and
// all-gather on the GPU's copy engines when the buffers are symmetric windows and the communicator's CTA policy is
// NCCL_CTA_POLICY_ZERO; a reduction has no copy-engine form, so per bucket of n elements (n a multiple of
// ranks * 64; the plan is aligned, the buffers padded):
//   1. ncclAlltoAll: slice r of every rank's bucket lands on rank r (recv holds the ranks' slices in rank order);
//   2. sum_slices: a small kernel on 32 blocks sums them, in rank order, into this rank's slice of `out`;
//   3. ncclAllGather in place on `out`: every rank gets every reduced slice.
// Every rank's sum of a slice is the same bits (one rank computes it), so weights stay identical across ranks.
#include "phase4_chunked_nccl/comm_buffer.hpp"
#include "phase4_chunked_nccl/gradient_sync.hpp"
#include "phase4_chunked_nccl/kernels.cuh"

namespace phase4 {
namespace {

constexpr std::uint64_t kSliceAlignment = 64;  // elements per rank slice are a multiple of this (256 bytes)
constexpr int kReduceBlocks = 32;

class CopyEngineAllReduce final : public GradientSync {
 public:
  explicit CopyEngineAllReduce(const SyncContext& context)
      : nccl_(context.nccl), rank_(context.rank), ranks_(context.ranks), hidden_(context.config.hidden),
        padded_((context.elements + unit() - 1) / unit() * unit()),
        grads_(padded_, context.nccl), recv_(padded_, context.nccl), out_(padded_, context.nccl) {}

  float* gradient() override { return grads_.get(); }

  BucketPlan adapt(const BucketPlan& plan) const override { return align_plan(plan, hidden_, unit()); }

  void communicate(const Bucket& bucket, cudaStream_t comm) override {
    // The last bucket may end off the unit: it runs to the padding's end (zeros on every rank).
    const std::uint64_t n = (bucket.size() + unit() - 1) / unit() * unit();
    const std::uint64_t slice = n / ranks_;
    float* mine = out_.get() + bucket.begin + rank_ * slice;
    NCCL_CHECK(ncclAlltoAll(grads_.get() + bucket.begin, recv_.get() + bucket.begin, slice, ncclFloat, nccl_, comm));
    sum_slices(recv_.get() + bucket.begin, slice, ranks_, mine, slice, kReduceBlocks, comm);
    NCCL_CHECK(ncclAllGather(mine, out_.get() + bucket.begin, slice, ncclFloat, nccl_, comm));
  }

  void update(float* weights, float scale, std::size_t n, cudaStream_t compute) override {
    sgd(weights, out_.get(), scale, n, compute);
  }

  const float* reduced(cudaStream_t) override { return out_.get(); }

 private:
  std::uint64_t unit() const { return kSliceAlignment * static_cast<std::uint64_t>(ranks_); }

  ncclComm_t nccl_;
  int rank_, ranks_, hidden_;
  std::uint64_t padded_;
  CommBuffer<float> grads_, recv_, out_;
};

}  // namespace

std::unique_ptr<GradientSync> make_copy_engine(const SyncContext& context) {
  if (context.config.comm_dtype != "fp32") throw std::invalid_argument("--sync ce moves fp32 only");
  return std::make_unique<CopyEngineAllReduce>(context);
}

}  // namespace phase4
