// Strategies sharded and sharded-ce (sync/gradient_sync.hpp; the sharded schedule drives them): ZeRO-1/FSDP-style data parallelism. Each layer's H*H
// weights are cut into `ranks` slices of c elements (c = H*H / ranks rounded down to a multiple of `a`: 1, or 64
// for the copy engines) and a tail of the H*H - ranks * c elements left (none when the ranks divide the layer);
// rank r owns slice r of every layer, every rank the tails.
//   backward, per bucket (comm stream; the plan is rounded to whole layers): each of its layers' gradient
//     reduce-scattered to the slices' owners, the tail all-reduced:
//       sharded:    ncclReduceScatter into `received_` (this rank's slices; the bucket's layers in one NCCL group);
//       sharded-ce: ncclAlltoAll on the copy engines (symmetric windows, CTA policy zero): slice r of every rank
//                   lands on rank r, in rank order; the update sums them (no kernel on the comm stream).
//   update (compute stream): this rank's slices only (sharded-ce: the sum of the received slices fused into it), and
//     the tails, the same on every rank. Overlapped, each layer's update is deferred into the next step's forward,
//     right before the layer's gather (apply_deferred): there the compute stream waits for gathers anyway. Seen
//     otherwise on 4096,16,512 (sharded-ce): the update, 0.7 ms of memory traffic, ran after the last reduction
//     with the comm stream idle; on a side stream during the backward it slowed the backward GEMMs and the
//     all-to-alls by as much (0.18 to 0.23 ms per step).
//   gather (comm stream, issued by the trainer ahead of the forward layer that reads them): an in-place
//     ncclAllGather of the layer's updated slices into the weights (sharded-ce: on the copy engines, so the weights
//     live in a symmetric window this strategy owns).
// Summing in rank order, every owner computes its slice's bits once, so the ranks' weights agree bit for bit.
#include "phase4_chunked_nccl/sync/registry.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include <vector>

#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/sync/comm_buffer.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"

namespace phase4 {
namespace {

constexpr std::uint64_t kCopyEngineAlignment = 64;  // elements per slice a multiple of this (256 bytes)

class ZeroSharded final : public ShardedSync {
 public:
  ZeroSharded(const SyncContext& context, bool copy_engine)
      : ShardedSync(context.nccl, copy_engine ? "alltoall" : "reduce_scatter"), nccl_(context.nccl), rank_(context.rank), ranks_(context.ranks), layers_(context.config.layers),
        hidden_(context.config.hidden), layout_(context.layout), copy_engine_(copy_engine),
        layer_(static_cast<std::uint64_t>(hidden_) * hidden_),
        slice_(layer_ / (ranks_ * alignment()) * alignment()), tail_(layer_ - ranks_ * slice_),
        grads_(context.elements(), window()), received_(copy_engine ? context.elements() : layers_ * slice_, window()),
        weights_(copy_engine ? context.elements() : 0, window()) {
    use_weights(weights_.get());  // null for sharded: the model's own
  }

  float* gradient() override { return grads_.get(); }

  // Whole layers per bucket: a layer's slices are reduced in one collective, so no bucket boundary cuts a layer.
  BucketPlan adapt(const BucketPlan& plan) const override { return align_plan(plan, layout_, layer_); }

  void communicate(const Bucket& bucket, cudaStream_t comm) override {
    const Collectives& nccl = collectives();
    if (!copy_engine_) nccl.group_start();
    for (std::uint64_t at = bucket.begin; at < bucket.end; at += layer_) {
      const std::uint64_t slot = at / layer_;
      if (slice_ > 0 && copy_engine_) {
        nccl.all_to_all(grads_.get() + at, received_.get() + at, slice_, comm);
      } else if (slice_ > 0) {
        nccl.reduce_scatter(grads_.get() + at, received_.get() + slot * slice_, slice_, comm);
      }
      if (tail_ > 0) nccl.all_reduce(grads_.get() + at + ranks_ * slice_, tail_, ncclFloat, comm);
    }
    if (!copy_engine_) nccl.group_end();
  }

  void update(float* weights, float scale, std::size_t, cudaStream_t compute) override {
    update_slots(0, layers_, weights, scale, compute);
    drop_deferred();
  }

  void defer_update(float scale) override {
    deferred_.assign(layers_, 1);
    deferred_scale_ = scale;
  }

  void apply_deferred(int layer, float* weights, cudaStream_t compute) override {
    const int slot = layers_ - layer;
    if (deferred_.empty() || !deferred_[slot]) return;
    update_slots(slot, slot + 1, weights, deferred_scale_, compute);
    deferred_[slot] = 0;
  }

  void drop_deferred() override { deferred_.clear(); }

  void gather(int layer, float* weights, cudaStream_t comm) override {
    if (slice_ == 0) return;  // a layer smaller than the ranks: all tail, already the same everywhere
    float* at = weights + static_cast<std::uint64_t>(layers_ - layer) * layer_;
    collectives().all_gather(at + rank_ * slice_, at, slice_, comm);
  }

  // Every rank's reduced slices gathered into one full gradient (the checks; allocated on first use).
  const float* reduced(cudaStream_t stream) override {
    if (!full_.get()) full_ = CommBuffer<float>(grads_.size(), window());
    sum_rows(full_.get() + rank_ * slice_, received_.get(), received(), stream);
    for (int slot = 0; slot < layers_ && slice_ > 0; ++slot) {
      float* at = full_.get() + slot * layer_;
      collectives().all_gather(at + rank_ * slice_, at, slice_, stream);
    }
    const std::size_t pitch = layer_ * sizeof(float);
    if (tail_ > 0) {
      CUDA_CHECK(cudaMemcpy2DAsync(full_.get() + ranks_ * slice_, pitch, grads_.get() + ranks_ * slice_, pitch,
                                   tail_ * sizeof(float), layers_, cudaMemcpyDeviceToDevice, stream));
    }
    return full_.get();
  }

 private:
  // Gradient slots (layers in backward order) [from, to): this rank's slices and the tails.
  void update_slots(std::uint64_t from, std::uint64_t to, float* weights, float scale, cudaStream_t stream) {
    RowSlices mine = received(), tail = tails();
    mine.rows = tail.rows = to - from;
    float* w = weights + from * layer_;
    sgd_rows(w + rank_ * slice_, received_.get() + from * mine.in_stride, scale, mine, stream);
    sgd_rows(w + ranks_ * slice_, grads_.get() + from * layer_ + ranks_ * slice_, scale, tail, stream);
  }
  std::uint64_t alignment() const { return copy_engine_ ? kCopyEngineAlignment : 1; }
  ncclComm_t window() const { return copy_engine_ ? nccl_ : nullptr; }
  // This rank's slices as the reduction left them: one per layer in `shard` (sharded), or every rank's part of
  // them at the layer's offset of the received buffer, to be summed (sharded-ce). Rows are layers.
  RowSlices received() const {
    RowSlices shape;
    shape.rows = layers_, shape.n = slice_, shape.out_stride = layer_;
    shape.in_stride = copy_engine_ ? layer_ : slice_;
    shape.parts = copy_engine_ ? ranks_ : 1;
    shape.part_stride = slice_;
    return shape;
  }
  RowSlices tails() const {
    RowSlices shape;
    shape.rows = layers_, shape.n = tail_, shape.out_stride = layer_, shape.in_stride = layer_;
    return shape;
  }

  ncclComm_t nccl_;
  int rank_, ranks_, layers_, hidden_;
  GradientLayout layout_;
  bool copy_engine_;
  std::uint64_t layer_, slice_, tail_;
  CommBuffer<float> grads_, received_, weights_, full_;
  std::vector<char> deferred_;  // per slot: its update deferred into the next forward (overlapped runs)
  float deferred_scale_ = 0;
};

std::unique_ptr<GradientSync> make_sharded(const SyncContext& context) {
  return std::make_unique<ZeroSharded>(context, false);
}

std::unique_ptr<GradientSync> make_sharded_copy_engine(const SyncContext& context) {
  return std::make_unique<ZeroSharded>(context, true);
}

}  // namespace
}  // namespace phase4
#endif

namespace phase4 {
namespace {

SyncRow sharded_row() {
  SyncRow row;
  row.name = "sharded";
  row.help = "ZeRO-1 style: ncclReduceScatter per bucket in the backward, each rank updates its slices, "
             "ncclAllGather per layer during the next forward (buckets rounded to whole layers; fp32)";
  row.schedule = ScheduleKind::kSharded;
  row.graph = row.accumulation = false;
  row.reference = "sharded";
  row.buffers = 2.5;  // the gradient, this rank's reduced slices (at most half), the gathered gradient of the checks
  row.make = OB_SYNC_FACTORY(make_sharded);
  return row;
}

SyncRow sharded_copy_engine_row() {
  SyncRow row = sharded_row();
  row.name = "sharded-ce";
  row.help = "sharded on the copy engines: ncclAlltoAll per layer, the slices' sum fused into the update, "
             "ncclAllGather per layer, on symmetric windows (CTA policy zero; fp32)";
  row.cta_policy = CtaPolicy::kZero;
  row.bounded = false;
  row.peer_access = true;
  row.buffers = 3;  // the gradient, the received slices, the gathered gradient of the checks
  row.make = OB_SYNC_FACTORY(make_sharded_copy_engine);
  return row;
}

const RegisterSync kSharded(sharded_row());
const RegisterSync kShardedCopyEngine(sharded_copy_engine_row());

}  // namespace
}  // namespace phase4
