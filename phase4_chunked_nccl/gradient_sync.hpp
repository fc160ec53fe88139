// The strategy seam of phase 4 (DESIGN.md, "Where things live"): how gradient buckets are synchronised across
// ranks. The Trainer owns the loop, the streams and the model; a strategy owns the buffers its communication needs
// and fills in five steps, like a collective fills nccl-tests' table:
//   set-up (constructor: buffers, windows)   bucket_ready (compute stream, right after the backward step that
//   completes a bucket)   communicate (comm stream)   after_step / finish (overlapped runs only: work a strategy
//   defers to the compute stream)   update (compute stream, once every bucket is done)   reduced (the synchronised
//   fp32 gradient, for the checks).
// A new strategy is one file, a row of sync_options() (config.cpp: name, help, what it needs) and a case of
// make_sync(); the loop, the timing and the derived rows stay.
//   nccl      in-place ncclAllReduce per bucket on a cudaMalloc'd gradient (fp32, or bf16 on a half-size wire)
//   nccl-sym  the same all-reduce on buffers from ncclMemAlloc registered once as symmetric windows
//             (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC): NCCL's symmetric kernels, few CTAs
//   ce        zero-SM all-reduce from copy-engine collectives on symmetric windows (communicator made with
//             NCCL_CTA_POLICY_ZERO): per bucket ncclAlltoAll, a kernel summing the ranks' slices, and an in-place
//             ncclAllGather of the reduced slices; overlapped, the sum runs on the compute stream a backward step
//             later, so the comm stream holds copy-engine work only
//   sharded, sharded-ce   ZeRO-1/FSDP-style: each bucket reduce-scattered to the owners of its layers' slices, each
//             rank updating its slices only, and every layer's weights all-gathered (gather()) ahead of the next
//             forward's use of them (sync_sharded.cu)
#pragma once

#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "phase4_chunked_nccl/bucket_plan.hpp"
#include "phase4_chunked_nccl/config.hpp"

namespace phase4 {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
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
  // One bucket synchronised to the end on the comm stream (seq, comm-only and the checks).
  void synchronise(const Bucket& bucket, cudaStream_t comm) {
    communicate(bucket, comm);
    finish(comm, comm);
  }
  // Compute stream, after every bucket's communication: w -= scale * (synchronised gradient).
  virtual void update(float* weights, float scale, std::size_t n, cudaStream_t compute) = 0;
  // The synchronised gradient in fp32 (converted on `stream` where the wire is not fp32), for the checks.
  virtual const float* reduced(cudaStream_t stream) = 0;
  // Bytes one all-reduce of `elements` puts on the wire (for the bandwidth columns).
  virtual double wire_bytes(std::uint64_t elements) const { return 4.0 * static_cast<double>(elements); }
  // The timeline's name of a bucket's communication.
  virtual const char* bucket_op() const { return "allreduce"; }

  // Sharded strategies: update() writes this rank's slices only, and gather() brings every rank's slices of forward
  // layer `layer` (1-based) into `weights` on the comm stream; the trainer gathers each layer before the forward reads
  // it (and all layers before the weights are read outside a step).
  virtual bool sharded() const { return false; }
  virtual void gather(int layer, float* weights, cudaStream_t comm) { (void)layer, (void)weights, (void)comm; }
  // Overlapped runs of a sharded strategy defer the step's update (defer_update() at the step's end instead of
  // update()) into the next step's forward: apply_deferred() updates one forward layer's slices on the compute stream
  // right before the trainer gathers that layer, while the forward waits for gathers anyway (ZeRO's optimizer
  // overlap). drop_deferred() forgets a deferred update (the weights were reset).
  virtual void defer_update(float scale) { (void)scale; }
  virtual void apply_deferred(int layer, float* weights, cudaStream_t compute) {
    (void)layer, (void)weights, (void)compute;
  }
  virtual void drop_deferred() {}
  // A weight buffer of the strategy's own (elements long, e.g. a symmetric window the gathers need), or null: the
  // model allocates its own.
  virtual float* weights() { return nullptr; }
};

struct SyncContext {
  const Config& config;
  int rank = 0, ranks = 1;
  ncclComm_t nccl = nullptr;
  std::uint64_t elements = 0;  // the gradient's length
};

// The strategy the config's --sync names (sync_options() lists them).
std::unique_ptr<GradientSync> make_sync(const std::string& name, const SyncContext& context);

// The strategies' factories, one per file.
std::unique_ptr<GradientSync> make_nccl_allreduce(const SyncContext& context);
std::unique_ptr<GradientSync> make_nccl_symmetric(const SyncContext& context);
std::unique_ptr<GradientSync> make_copy_engine(const SyncContext& context);
std::unique_ptr<GradientSync> make_sharded(const SyncContext& context, bool copy_engine);

}  // namespace phase4
