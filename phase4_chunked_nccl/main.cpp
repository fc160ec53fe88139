// phase4_chunked_nccl: data-parallel training of an L-layer MLP or a transformer's own tensors (--model), one MPI rank
// per GPU, whose backward pass hands gradient buckets to a transport (NCCL, the copy engines, or sharded
// reduce-scatters and gathers) on a second stream as soon as they are ready (the --sync strategy in sync/, driven by its
// schedule in schedule/), measured against sequential, compute-only and comm-only runs and the schedule's bound;
// chunk, bucket, strategy and plan sweeps in one process (driver/).
#include <nccl.h>

#include "common/mpi_phase.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/job.hpp"

int main(int argc, char** argv) {
  phase4::Config config;
  auto phase = ob::make_phase<ob::MpiPhase>(
      "phase4", "phase4_chunked_nccl",
      "Phase 4: gradient buckets handed to NCCL or the copy engines as an MLP's or a transformer's backward makes them",
      config, phase4::add_options);
  phase.validate = [&](const CLI::App& app) { phase4::validate(app, config); };
  phase.inputs = [&] { return phase4::input_files(config); };
  // A stalled rank: abort this rank's NCCL communicator (its kernels stop), then the whole job.
  phase.on_stall = [] {
    if (ncclComm_t comm = phase4::live_comm().load()) ncclCommAbort(comm);
  };
  phase.run = [&](const ob::PhaseContext& context) { return phase4::run_job(config, context); };
  return ob::run_mpi_phase(argc, argv, phase);
}
