// Phase 4's run inside the harness (common/mpi_phase.hpp): a GPU of its own per rank, every point checked to fit
// before anything is allocated, the calibration loaded, the power monitor, the sweep, and what the metadata and
// the console say about it.
#pragma once

#include <nccl.h>

#include <atomic>
#include <variant>

#include "common/mpi_phase.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"

namespace phase4 {

// The communicator in use, for the watchdog's last act (ncclCommAbort before the job is aborted).
std::atomic<ncclComm_t>& live_comm();

std::variant<int, ob::PhaseResult> run_job(Config& config, const ob::PhaseContext& context);

}  // namespace phase4
