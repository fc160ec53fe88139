// Phase 4's sweep: every point of a configuration's --sweep on this rank's GPU, and the NCCL communicator's
// lifetime across them (a new one where a point needs other ncclConfig_t settings: a CTA sweep, --sync ce).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/cuda/power_monitor.hpp"
#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4 {

struct SweepResult {
  std::vector<ob::SummaryRow> rows;
  std::vector<ob::TimelineEvent> events;  // a single point's timeline (a sweep keeps the summary only)
  std::string failure;                    // "<point label>: <first failed check>"
  std::optional<Calibration> measured;    // the calibration measured first (--calibrate, or --plan auto without one)
};

// Every point of config.sweep_points() on this rank's GPU. `live_comm` always holds the communicator in use (for
// the watchdog's ncclCommAbort). `power` may be null. `calibration` (may be null): the planner's, for --plan auto
// and predicted_ms; measured first when absent and needed, or with `calibrate`.
SweepResult run_sweep(const std::vector<Config>& points, int rank, int ranks, MPI_Comm comm,
                      ob::SteadyClock::time_point origin, const ob::PowerMonitor* power,
                      std::atomic<ncclComm_t>& live_comm, std::ostream* progress, const Calibration* calibration,
                      bool calibrate);

// The calibration in `path` (read by rank 0, broadcast), checked against this run (exit 2 naming what differs, or
// a planned strategy it lacks).
Calibration load_calibration(const std::string& path, const Config& config, int ranks, const std::string& gpu,
                             MPI_Comm comm);

// Throws ob::UsageError when --gemm-sm-margin leaves the current device no SM to compute on.
void require_sm_margin(const std::vector<Config>& points);

}  // namespace phase4
