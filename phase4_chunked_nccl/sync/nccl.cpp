// Strategies nccl and nccl-sym (sync/gradient_sync.hpp): one in-place ncclAllReduce per bucket on the comm stream, in
// fp32 on the gradient itself, or with --comm-dtype bf16 on a half-size wire that the compute stream fills right
// after the backward step completing the bucket (the update reads the wire, the cast back fused into it). The two
// differ only in their buffers: cudaMalloc for nccl; ncclMemAlloc registered as symmetric windows for nccl-sym, so
// NCCL runs its symmetric kernels (fewer CTAs; NCCL_SYM_CTAS or the communicator's CTA policy set how many).
#include "phase4_chunked_nccl/sync/registry.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include <cuda_bf16.h>

#include "phase4_chunked_nccl/sync/kernels.cuh"
#include "phase4_chunked_nccl/sync/comm_buffer.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"

namespace phase4 {
namespace {

class NcclAllReduce final : public GradientSync {
 public:
  NcclAllReduce(const SyncContext& context, bool symmetric)
      : GradientSync(context.nccl, "allreduce", context.spec.wire == WireType::kBf16 ? 2 : 4),
        bf16_(context.spec.wire == WireType::kBf16),
        grads_(context.elements(), symmetric && !bf16_ ? context.nccl : nullptr),
        wire_(bf16_ ? context.elements() : 0, symmetric ? context.nccl : nullptr) {}

  float* gradient() override { return grads_.get(); }

  void bucket_ready(const Bucket& bucket, cudaStream_t compute) override {
    if (bf16_) to_bf16(grads_.get() + bucket.begin, wire_.get() + bucket.begin, bucket.size(), compute);
  }

  void communicate(const Bucket& bucket, cudaStream_t comm) override {
    if (bf16_) {
      collectives().all_reduce(wire_.get() + bucket.begin, bucket.size(), ncclBfloat16, comm);
    } else {
      collectives().all_reduce(grads_.get() + bucket.begin, bucket.size(), ncclFloat, comm);
    }
  }

  void update_part(float* weights, float scale, std::uint64_t begin, std::uint64_t n, cudaStream_t compute) override {
    if (bf16_) {
      sgd(weights + begin, wire_.get() + begin, scale, n, compute);
    } else {
      sgd(weights + begin, grads_.get() + begin, scale, n, compute);
    }
  }

  const float* reduced(cudaStream_t stream) override {
    if (bf16_) from_bf16(wire_.get(), grads_.get(), grads_.size(), stream);
    return grads_.get();
  }

 private:
  bool bf16_;
  CommBuffer<float> grads_;  // symmetric only when it is what travels (fp32)
  CommBuffer<__nv_bfloat16> wire_;  // --comm-dtype bf16: the gradient as it travels
};

std::unique_ptr<GradientSync> make_plain(const SyncContext& context) {
  return std::make_unique<NcclAllReduce>(context, false);
}

std::unique_ptr<GradientSync> make_symmetric(const SyncContext& context) {
  return std::make_unique<NcclAllReduce>(context, true);
}

}  // namespace
}  // namespace phase4
#endif

namespace phase4 {
namespace {

SyncRow row(const char* name, const char* help, std::unique_ptr<GradientSync> (*make)(const SyncContext&)) {
  SyncRow row;
  row.name = name;
  row.help = help;
  row.bf16 = true;
  row.reference = "nccl";
  row.buffers = 1;  // the gradient (the bf16 wire of --comm-dtype bf16 is counted for every strategy that has one)
  row.make = make;
  return row;
}

SyncRow plain_row() {
  SyncRow plain = row("nccl", "in-place ncclAllReduce per bucket (ring kernels on SMs)", OB_SYNC_FACTORY(make_plain));
  plain.exact_reference = true;
  return plain;
}

const RegisterSync kPlain(plain_row());
const RegisterSync kPlainCarried(carrying(plain_row()));
SyncRow symmetric_row() {
  SyncRow symmetric =
      row("nccl-sym", "ncclAllReduce on buffers registered as NCCL symmetric windows (symmetric kernels, few CTAs)",
          OB_SYNC_FACTORY(make_symmetric));
  symmetric.peer_access = true;
  return symmetric;
}

const RegisterSync kSymmetric(symmetric_row());
const RegisterSync kSymmetricCarried(carrying(symmetric_row()));

}  // namespace
}  // namespace phase4
