// The NCCL communicator of one rank per GPU: rank 0 makes the unique id and MPI broadcasts it. maxCTAs and
// minCTAs (0: NCCL's defaults) go through ncclConfig_t: fewer CTAs leave more SMs to the overlapped compute.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "common/cuda/cuda_check.hpp"
#include "common/mpi_check.hpp"

namespace phase4 {

class NcclComm {
 public:
  NcclComm(int rank, int ranks, MPI_Comm comm, int max_ctas = 0, int min_ctas = 0)
      : max_ctas_(max_ctas), min_ctas_(min_ctas) {
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (max_ctas > 0) config.maxCTAs = max_ctas;
    if (min_ctas > 0) config.minCTAs = min_ctas;
    NCCL_CHECK(ncclCommInitRankConfig(&comm_, ranks, id, rank, &config));
  }
  bool matches(int max_ctas, int min_ctas) const { return max_ctas == max_ctas_ && min_ctas == min_ctas_; }
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
  int max_ctas_ = 0, min_ctas_ = 0;
};

}  // namespace phase4
