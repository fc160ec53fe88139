// The strategy seam of phase 4 (DESIGN.md, "Where things live"): how gradient buckets are synchronised across
// ranks. A schedule (schedule/) owns the loop, the streams and the model and decides when; a strategy owns the
// buffers its communication needs and says how, in a few steps:
//   set-up (constructor: buffers, windows)   bucket_ready (compute stream, right after the backward step that
//   completes a bucket)   communicate (comm stream)   after_step / finish (overlapped runs only: work a strategy
//   defers to the compute stream)   update (compute stream, once every bucket is done)   reduced (the synchronised
//   fp32 gradient, for the checks).
// A strategy is one file under sync/ with its row (registry.hpp); the schedules, the timing and the derived rows
// stay as they are. The all-reduce schedule drives a GradientSync; the sharded schedule a ShardedSync, which also
// gathers the weights each rank updated a slice of.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>

#include "phase4_chunked_nccl/core/spec.hpp"
#include "phase4_chunked_nccl/sync/collectives.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {

struct SyncContext {
  SyncSpec spec;
  int rank = 0, ranks = 1;
  ncclComm_t nccl = nullptr;
  GradientLayout layout;  // the gradient's backward steps (bucket_plan.hpp)
  std::uint64_t elements() const { return layout.elements(); }
};

class GradientSync {
 public:
  // `comm`: the communicator its collectives run on; `op`: the timeline's name of a bucket's communication;
  // `wire_bytes_per_element`: what one element costs on the wire (the bandwidth columns).
  explicit GradientSync(ncclComm_t comm, const char* op = "allreduce", double wire_bytes_per_element = 4)
      : collectives_(comm), op_(op), wire_bytes_per_element_(wire_bytes_per_element) {}
  virtual ~GradientSync() = default;
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // The buffer the backward pass writes dW into (elements in backward order, at least plan.elements).
  virtual float* gradient() = 0;
  // The bucket plan this strategy can run: `plan` itself, or its buckets' boundaries moved (ce aligns them to the
  // ranks' slices).
  virtual BucketPlan adapt(const BucketPlan& plan) const { return plan; }
  // Compute stream, right after the backward step that completes `bucket` (every mode: it is part of making the
  // gradient), e.g. the bf16 cast onto the wire.
  virtual void bucket_ready(const Bucket& bucket, cudaStream_t compute) { (void)bucket, (void)compute; }
  // Comm stream: the bucket summed over ranks, or (a strategy that defers work) the first part of it; buckets come
  // in plan order.
  virtual void communicate(const Bucket& bucket, cudaStream_t comm) = 0;
  // Overlapped runs, compute stream, after backward step `step` and its buckets' communicate(): deferred work of
  // buckets handed over earlier.
  virtual void after_step(int step, cudaStream_t compute, cudaStream_t comm) { (void)step, (void)compute, (void)comm; }
  // Every deferred part still open, its compute on `compute` (the comm stream itself when nothing overlaps).
  virtual void finish(cudaStream_t compute, cudaStream_t comm) { (void)compute, (void)comm; }
  // Compute stream, after the communication of the buckets holding elements [begin, begin + n): w -= scale *
  // (synchronised gradient) there. The carry schedule updates a range at a time; a strategy whose update is not
  // elementwise over the gradient (the sharded ones: each rank's slices) takes the whole gradient only.
  virtual void update_part(float* weights, float scale, std::uint64_t begin, std::uint64_t n, cudaStream_t compute) = 0;
  // The same for the whole gradient (n elements).
  void update(float* weights, float scale, std::size_t n, cudaStream_t compute) {
    update_part(weights, scale, 0, n, compute);
  }
  // The synchronised gradient in fp32 (converted on `stream` where the wire is not fp32), for the checks.
  virtual const float* reduced(cudaStream_t stream) = 0;

  // One bucket synchronised to the end on the comm stream (seq, comm-only and the checks).
  void synchronise(const Bucket& bucket, cudaStream_t comm) {
    communicate(bucket, comm);
    finish(comm, comm);
  }
  // Bytes one synchronisation of `elements` puts on the wire.
  double wire_bytes(std::uint64_t elements) const { return wire_bytes_per_element_ * static_cast<double>(elements); }
  const char* bucket_op() const { return op_; }
  // A weight buffer of the strategy's own (elements long, e.g. a symmetric window its gathers need), or null: the
  // model allocates its own.
  float* weights() const { return weights_; }
  // Every collective this strategy enqueues (silenced for the compute-only step: collectives.hpp).
  Collectives& collectives() { return collectives_; }

 protected:
  void use_weights(float* weights) { weights_ = weights; }

 private:
  Collectives collectives_;
  const char* op_;
  double wire_bytes_per_element_;
  float* weights_ = nullptr;
};

// A strategy of the sharded schedule: update() writes this rank's slices only, and gather() brings every rank's
// slices of forward layer `layer` (1-based) into `weights` on the comm stream; the schedule gathers each layer before
// the forward reads it (and all layers before the weights are read outside a step). Overlapped, the step's update is
// deferred (defer_update() at the step's end instead of update()) into the next step's forward: apply_deferred()
// updates one forward layer's slices on the compute stream right before the schedule gathers that layer, while the
// forward waits for gathers anyway (ZeRO's optimizer overlap). drop_deferred() forgets a deferred update (the
// weights were reset).
class ShardedSync : public GradientSync {
 public:
  using GradientSync::GradientSync;
  virtual void gather(int layer, float* weights, cudaStream_t comm) = 0;
  virtual void defer_update(float scale) = 0;
  virtual void apply_deferred(int layer, float* weights, cudaStream_t compute) = 0;
  virtual void drop_deferred() = 0;
  // A deferred update of zero gradients, as if a step had just deferred one that changes nothing: a captured
  // overlapped step applies the previous step's update unconditionally (--graph), and its first replay has none.
  virtual void defer_empty_update(float scale, cudaStream_t stream) = 0;
};

// The strategy --sync `name` names, made by its row's factory.
inline std::unique_ptr<GradientSync> make_sync(const std::string& name, const SyncContext& context) {
  const SyncRow& row = sync_row(name);
  if (!row.make) throw std::invalid_argument("--sync: '" + name + "' is not built in this build (no CUDA)");
  return row.make(context);
}

}  // namespace phase4
