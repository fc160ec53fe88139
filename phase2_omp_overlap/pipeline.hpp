// Runs one mode of the chunk pipeline through the common iteration protocol (common/iteration.hpp), timing every
// task with steady_clock.
//  seq:      one thread: compute k, communicate k, next k.
//  overlap:  OpenMP sections, two of them: the compute section runs chunk after chunk (the real workload's GEMM
//            on a nested team); the communication section is one dedicated thread that communicates chunk k as soon
//            as the compute section publishes it (an atomic counter), while chunk k+1 is computed. Sections rather
//            than tasks because the communication thread must be one fixed thread, as a progress thread or a comm
//            stream is: with tasks any thread may pick up a communication task, and the nested compute team would
//            compete with it.
//  compute:  the compute tasks alone; comm: the communication tasks alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase2_omp_overlap/config.hpp"
#include "phase2_omp_overlap/workload.hpp"

namespace phase2 {

struct ModeRun {
  ob::Mode mode = ob::Mode::kSeq;
  std::vector<double> iter_ms;  // wall time of each timed iteration
  std::vector<double> compute_total_ms;  // per timed iteration: the sum of its compute tasks' durations
  std::vector<double> compute_task_ms;  // every timed compute task
  std::vector<double> comm_task_ms;  // every timed communication task
  std::vector<ob::TimelineEvent> events;  // lane "<mode>:thread <omp thread>", name "compute" or "comm"
  std::uint64_t wrong = 0;  // elements wrong after the last checked iteration
  std::string first_wrong;
};

// `check`: verify the workload's buffers after every timed iteration (always after the last one).
ModeRun run_mode(ob::Mode mode, Workload& workload, const Config& config, ob::SteadyClock::time_point origin,
                 bool check);

}  // namespace phase2
