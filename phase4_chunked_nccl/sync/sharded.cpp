// Strategies sharded and sharded-ce (sync/gradient_sync.hpp; the sharded schedule drives them): ZeRO-1/FSDP-style
// data parallelism. Each backward step's tensor (one of phase 4's H*H layers, or a transformer's matrix, bias or
// norm: --model), of n elements, is cut into `ranks` slices of c elements (c = n / ranks rounded down to a multiple
// of `a`: 1, or 64 for the copy engines) and a tail of the n - ranks * c elements left (none when the ranks divide
// it; all of a tensor smaller than ranks * a); rank r owns slice r of every tensor, every rank the tails.
//   backward, per bucket (comm stream; the plan is rounded to whole tensors): each of its tensors' gradient
//     reduce-scattered to the slices' owners, the tail all-reduced:
//       sharded:    ncclReduceScatter into `received_` (this rank's slices; the bucket's tensors in one NCCL group);
//       sharded-ce: ncclAlltoAll on the copy engines (symmetric windows, CTA policy zero): slice r of every rank
//                   lands on rank r, in rank order; the update sums them (no kernel on the comm stream).
//   update (compute stream): this rank's slices only (sharded-ce: the sum of the received slices fused into it), and
//     the tails, the same on every rank; consecutive tensors of one size in one kernel each (all of phase 4's
//     layers). Overlapped, each tensor's update is deferred into the next step's forward, right before its gather
//     (apply_deferred): there the compute stream waits for gathers anyway. Seen otherwise on 4096,16,512
//     (sharded-ce): the update, 0.7 ms of memory traffic, ran after the last reduction with the comm stream idle; on
//     a side stream during the backward it slowed the backward GEMMs and the all-to-alls by as much (0.18 to 0.23 ms
//     per step).
//   gather (comm stream, issued by the trainer ahead of the forward layer that reads them): an in-place
//     ncclAllGather of the tensor's updated slices into the weights (sharded-ce: on the copy engines, so the weights
//     live in a symmetric window this strategy owns).
// Summing in rank order, every owner computes its slice's bits once, so the ranks' weights agree bit for bit.
#include "phase4_chunked_nccl/sync/registry.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include <stdexcept>
#include <vector>

#include "phase4_chunked_nccl/sync/kernels.cuh"
#include "phase4_chunked_nccl/sync/comm_buffer.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"

namespace phase4 {
namespace {

constexpr std::uint64_t kCopyEngineAlignment = 64;  // elements per slice a multiple of this (256 bytes)

class ZeroSharded final : public ShardedSync {
 public:
  ZeroSharded(const SyncContext& context, bool copy_engine)
      : ShardedSync(context.nccl, copy_engine ? "alltoall" : "reduce_scatter"), nccl_(context.nccl),
        rank_(context.rank), ranks_(context.ranks), layout_(context.layout), copy_engine_(copy_engine),
        slots_(cut(context.layout)), grads_(context.elements(), window()),
        received_(copy_engine ? context.elements() : slices_total(), window()),
        weights_(copy_engine ? context.elements() : 0, window()) {
    use_weights(weights_.get());  // null for sharded: the model's own
  }

  float* gradient() override { return grads_.get(); }

  // Whole tensors per bucket: a tensor's slices are reduced in one collective, so no bucket boundary cuts one.
  BucketPlan adapt(const BucketPlan& plan) const override { return align_plan_to_steps(plan, layout_); }

  void communicate(const Bucket& bucket, cudaStream_t comm) override {
    const Collectives& nccl = collectives();
    if (!copy_engine_) nccl.group_start();
    for (int s = layout_.ready_step(bucket.begin + 1); s <= bucket.ready_after; ++s) {
      const Slot& slot = slots_[static_cast<std::size_t>(s)];
      float* at = grads_.get() + slot.begin;
      if (slot.slice > 0 && copy_engine_) {
        nccl.all_to_all(at, received_.get() + slot.received, slot.slice, comm);
      } else if (slot.slice > 0) {
        nccl.reduce_scatter(at, received_.get() + slot.received, slot.slice, comm);
      }
      if (slot.tail > 0) nccl.all_reduce(at + ranks_ * slot.slice, slot.tail, ncclFloat, comm);
    }
    if (!copy_engine_) nccl.group_end();
  }

  void update_part(float* weights, float scale, std::uint64_t begin, std::uint64_t n, cudaStream_t compute) override {
    if (begin != 0) throw std::logic_error("a sharded strategy updates the whole gradient only");
    (void)n;  // its slices of every tensor
    update_slots(0, static_cast<int>(slots_.size()), weights, scale, compute);
    drop_deferred();
  }

  void defer_update(float scale) override {
    deferred_.assign(slots_.size(), 1);
    deferred_scale_ = scale;
  }

  void apply_deferred(int layer, float* weights, cudaStream_t compute) override {
    const int slot = static_cast<int>(slots_.size()) - layer;
    if (deferred_.empty() || !deferred_[static_cast<std::size_t>(slot)]) return;
    update_slots(slot, slot + 1, weights, deferred_scale_, compute);
    deferred_[static_cast<std::size_t>(slot)] = 0;
  }

  void drop_deferred() override { deferred_.clear(); }

  void defer_empty_update(float scale, cudaStream_t stream) override {
    for (const CommBuffer<float>* buffer : {&grads_, &received_}) {
      if (buffer->bytes() > 0) CUDA_CHECK(cudaMemsetAsync(buffer->get(), 0, buffer->bytes(), stream));
    }
    defer_update(scale);
  }

  void gather(int layer, float* weights, cudaStream_t comm) override {
    const Slot& slot = slots_[slots_.size() - static_cast<std::size_t>(layer)];
    if (slot.slice == 0) return;  // a tensor smaller than the ranks' slices: all tail, already the same everywhere
    float* at = weights + slot.begin;
    collectives().all_gather(at + rank_ * slot.slice, at, slot.slice, comm);
  }

  // Every rank's reduced slices gathered into one full gradient (the checks; allocated on first use).
  const float* reduced(cudaStream_t stream) override {
    if (!full_.get()) full_ = CommBuffer<float>(grads_.size(), window());
    const int slots = static_cast<int>(slots_.size());
    for_each_run(0, slots, [&](const Slot& first, const RowSlices& mine, const RowSlices& tail) {
      sum_rows(full_.get() + first.begin + rank_ * first.slice, received_.get() + first.received, mine, stream);
      if (tail.n > 0) {
        const std::size_t pitch = tail.out_stride * sizeof(float);
        CUDA_CHECK(cudaMemcpy2DAsync(full_.get() + first.begin + ranks_ * first.slice, pitch,
                                     grads_.get() + first.begin + ranks_ * first.slice, pitch, tail.n * sizeof(float),
                                     tail.rows, cudaMemcpyDeviceToDevice, stream));
      }
    });
    for (const Slot& slot : slots_) {
      if (slot.slice == 0) continue;
      float* at = full_.get() + slot.begin;
      collectives().all_gather(at + rank_ * slot.slice, at, slot.slice, stream);
    }
    return full_.get();
  }

 private:
  // One backward step's tensor: where it starts in the gradient, its size, its slice and tail, and where this rank's
  // reduced slice (sharded-ce: every rank's slices, in rank order) lies in `received_`.
  struct Slot {
    std::uint64_t begin = 0, size = 0, slice = 0, tail = 0, received = 0;
  };

  std::vector<Slot> cut(const GradientLayout& layout) const {
    std::vector<Slot> slots;
    std::uint64_t received = 0;
    for (int s = 0; s < layout.steps(); ++s) {
      Slot slot;
      slot.begin = layout.begin(s);
      slot.size = layout.ends[static_cast<std::size_t>(s)] - slot.begin;
      slot.slice = slot.size / (ranks_ * alignment()) * alignment();
      slot.tail = slot.size - ranks_ * slot.slice;
      slot.received = copy_engine_ ? slot.begin : received;
      received += slot.slice;
      slots.push_back(slot);
    }
    return slots;
  }
  std::uint64_t slices_total() const {
    std::uint64_t total = 0;
    for (const Slot& slot : slots_) total += slot.slice;
    return total;
  }

  // Slots [from, to) in runs of consecutive tensors of one size (one run for phase 4's equal layers): `f(first,
  // mine, tail)` with the run's first slot and its rows of this rank's slices and of the tails.
  template <typename F>
  void for_each_run(int from, int to, F&& f) const {
    for (int s = from; s < to;) {
      const Slot& first = slots_[static_cast<std::size_t>(s)];
      int end = s + 1;
      while (end < to && slots_[static_cast<std::size_t>(end)].size == first.size) ++end;
      RowSlices mine, tail;
      mine.rows = tail.rows = static_cast<std::size_t>(end - s);
      mine.n = first.slice, mine.out_stride = first.size;
      mine.in_stride = copy_engine_ ? first.size : first.slice;
      mine.parts = copy_engine_ ? ranks_ : 1;
      mine.part_stride = first.slice;
      tail.n = first.tail, tail.out_stride = tail.in_stride = first.size;
      f(first, mine, tail);
      s = end;
    }
  }

  // Slots [from, to) (tensors in backward order): this rank's slices and the tails.
  void update_slots(int from, int to, float* weights, float scale, cudaStream_t stream) {
    for_each_run(from, to, [&](const Slot& first, const RowSlices& mine, const RowSlices& tail) {
      float* w = weights + first.begin;
      sgd_rows(w + rank_ * first.slice, received_.get() + first.received, scale, mine, stream);
      sgd_rows(w + ranks_ * first.slice, grads_.get() + first.begin + ranks_ * first.slice, scale, tail, stream);
    });
  }
  std::uint64_t alignment() const { return copy_engine_ ? kCopyEngineAlignment : 1; }
  ncclComm_t window() const { return copy_engine_ ? nccl_ : nullptr; }

  ncclComm_t nccl_;
  int rank_, ranks_;
  GradientLayout layout_;
  bool copy_engine_;
  std::vector<Slot> slots_;
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
  row.help =
      "ZeRO-1 style: ncclReduceScatter per bucket in the backward, each rank updates its slices, "
      "ncclAllGather per layer during the next forward (buckets rounded to whole layers or tensors; fp32)";
  row.schedule = "sharded";
  row.ring_only = true;
  row.accumulation = false;
  row.reference = "sharded";
  row.scales_as = "nccl";
  row.buffers = 2.5;  // the gradient, this rank's reduced slices (at most half), the gathered gradient of the checks
  row.make = OB_SYNC_FACTORY(make_sharded);
  return row;
}

SyncRow sharded_copy_engine_row() {
  SyncRow row = sharded_row();
  row.name = "sharded-ce";
  row.help =
      "sharded on the copy engines: ncclAlltoAll per layer, the slices' sum fused into the update, "
      "ncclAllGather per layer, on symmetric windows (CTA policy zero; fp32)";
  row.scales_as = "ce";
  row.update_sums_ranks = row.gathers_by_copies = true;
  row.buffers = 3;  // the gradient, the received slices, the gathered gradient of the checks
  row.make = OB_SYNC_FACTORY(make_sharded_copy_engine);
  return on_copy_engines(row);
}

const RegisterSync kSharded(sharded_row());
const RegisterSync kShardedCopyEngine(sharded_copy_engine_row());

}  // namespace
}  // namespace phase4
