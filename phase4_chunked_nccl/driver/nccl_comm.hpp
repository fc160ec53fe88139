// The NCCL communicator of one rank per GPU: rank 0 makes the unique id and MPI broadcasts it. maxCTAs, minCTAs
// and the CTA policy go through ncclConfig_t: fewer CTAs leave more SMs to the overlapped compute.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "common/cuda/cuda_check.hpp"
#include "common/mpi_check.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"

namespace phase4 {

class NcclComm {
 public:
  NcclComm(int rank, int ranks, MPI_Comm comm, const NcclSettings& settings = {}) : settings_(settings) {
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (settings.max_ctas > 0) config.maxCTAs = settings.max_ctas;
    if (settings.min_ctas > 0) config.minCTAs = settings.min_ctas;
    if (settings.cta_policy == CtaPolicy::kEfficiency) config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
    if (settings.cta_policy == CtaPolicy::kZero) config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
    NCCL_CHECK(ncclCommInitRankConfig(&comm_, ranks, id, rank, &config));
  }
  const NcclSettings& settings() const { return settings_; }
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
  NcclSettings settings_;
};

}  // namespace phase4
