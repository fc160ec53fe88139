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
  std::vector<ob::TimelineEvent> events;  // every point's timeline, labelled with its point in a sweep
  std::vector<std::string> order;  // the points' labels in the order they ran
  std::string failure;  // "<point label>: <first failed check>"
  std::optional<Calibration> measured;  // the calibration measured first (--calibrate, or --plan auto without one)
};

// Every point of `points` (in that order) on this rank's GPU. `live_comm` always holds the communicator in use (for
// the watchdog's ncclCommAbort). `power` may be null. `calibrations`: the planner's, each point predicted with its
// own model's (for --plan auto and predicted_ms); measured first when none is given and one is needed, or with
// `calibrate`.
SweepResult run_sweep(const std::vector<Config>& points, int rank, int ranks, MPI_Comm comm,
                      ob::SteadyClock::time_point origin, const ob::PowerMonitor* power,
                      std::atomic<ncclComm_t>& live_comm, std::ostream* progress,
                      const std::vector<Calibration>& calibrations, bool calibrate);

// The files of --calibration (read by rank 0, broadcast), each checked against the run: exit 2 for one of no point's
// model (naming what differs), for a --plan auto point without its model's, or for a planned strategy it lacks.
std::vector<Calibration> load_calibrations(const Config& config, int ranks, const std::string& gpu, MPI_Comm comm);

// The calibration of `point`'s model among `calibrations` (null when none is).
const Calibration* calibration_of(const std::vector<Calibration>& calibrations, const Config& point, int ranks,
                                  const std::string& gpu);

// Throws ob::UsageError when --gemm-sm-margin leaves the current device no SM to compute on.
void require_sm_margin(const std::vector<Config>& points);

}  // namespace phase4
