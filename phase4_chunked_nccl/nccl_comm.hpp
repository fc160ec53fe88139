// The NCCL communicator of one rank per GPU: rank 0 makes the unique id and MPI broadcasts it.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "common/cuda/cuda_check.hpp"
#include "common/mpi_check.hpp"

namespace phase4 {

class NcclComm {
 public:
  NcclComm(int rank, int ranks, MPI_Comm comm) {
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    NCCL_CHECK(ncclCommInitRank(&comm_, ranks, id, rank));
  }
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace phase4
