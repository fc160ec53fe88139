// The one door through which a strategy enqueues its collectives (GradientSync::collectives()). It exists so that
// the compute-only step can be the overlapped step with the collectives, and only they, left out (Schedule::run;
// METRICS.md, "compute"): while a Silence lives, every call here returns without enqueuing anything, and the
// strategy's sums, casts, copies, sliced updates, events and stream waits run as in the overlapped step. A strategy
// calls no NCCL collective directly (tests/python/test_structure.py checks sync/).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

#include "common/cuda/cuda_check.hpp"

namespace phase4 {

class Collectives {
 public:
  explicit Collectives(ncclComm_t comm) : comm_(comm) {}

  void all_reduce(void* data, std::size_t n, ncclDataType_t type, cudaStream_t stream) const {
    if (!silent_) NCCL_CHECK(ncclAllReduce(data, data, n, type, ncclSum, comm_, stream));
  }
  void reduce_scatter(const float* in, float* out, std::size_t n_out, cudaStream_t stream) const {
    if (!silent_) NCCL_CHECK(ncclReduceScatter(in, out, n_out, ncclFloat, ncclSum, comm_, stream));
  }
  void all_to_all(const float* in, float* out, std::size_t n_per_rank, cudaStream_t stream) const {
    if (!silent_) NCCL_CHECK(ncclAlltoAll(in, out, n_per_rank, ncclFloat, comm_, stream));
  }
  void all_gather(const float* in, float* out, std::size_t n_in, cudaStream_t stream) const {
    if (!silent_) NCCL_CHECK(ncclAllGather(in, out, n_in, ncclFloat, comm_, stream));
  }
  void group_start() const {
    if (!silent_) NCCL_CHECK(ncclGroupStart());
  }
  void group_end() const {
    if (!silent_) NCCL_CHECK(ncclGroupEnd());
  }

  // The collectives of `door` left out while this lives (scopes nest).
  class Silence {
   public:
    explicit Silence(Collectives& door) : door_(door), was_(door.silent_) { door_.silent_ = true; }
    ~Silence() { door_.silent_ = was_; }
    Silence(const Silence&) = delete;
    Silence& operator=(const Silence&) = delete;

   private:
    Collectives& door_;
    bool was_;
  };

 private:
  ncclComm_t comm_;
  bool silent_ = false;
};

}  // namespace phase4
