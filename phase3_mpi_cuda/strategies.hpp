// One phase 3 mode through the common iteration protocol (common/iteration.hpp) on this rank, timed with steady_clock (GPU chunks are
// synchronised before MPI sees them, so the host clock covers the GPU work too).
//  seq:          forward, every dW chunk, then MPI_Allreduce of every chunk, then the update.
//  thread:       OpenMP sections: the compute section computes chunk after chunk; a dedicated communication
//                thread all-reduces chunk k (blocking) while chunk k+1 is computed (MPI_THREAD_SERIALIZED: only
//                that thread calls MPI meanwhile).
// A GPU backend queues every chunk's GEMM and download first; each all-reduced chunk goes back on its own stream.
//  nonblocking:  one thread: MPI_Iallreduce per chunk as soon as it is computed, MPI_Test on every outstanding
//                request between chunks (and while a GPU chunk runs, or --probes times in a busy loop) to drive
//                progress, then MPI_Test until all are done before the update.
//  progress:     a progress thread (one for the mode's whole run) starts each chunk's MPI_Iallreduce as it is
//                computed and drives them with MPI_Test, polling while any is in flight and sleeping until the next
//                chunk otherwise. It takes a core of its own where the rank has one spare (compute threads fewer
//                than the cores of its affinity mask; the compute team keeps off it); on a shared core the compute
//                thread runs at SCHED_IDLE meanwhile so progress comes first (compute_can_yield), and where it
//                cannot, the progress thread backs off (sleeps of 1 us doubling to --backoff-us) while nothing moves.
//  compute:      the step without communication. comm: the chunk all-reduces alone, on an integer pattern whose
//                sum is checked exactly.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase3_mpi_cuda/backend.hpp"
#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

struct ModeRun {
  ob::Mode mode = ob::Mode::kSeq;
  std::vector<double> iter_ms;  // this rank, every timed iteration
  std::vector<double> compute_total_ms;  // per iteration: forward + chunk computes (+ update)
  std::vector<std::vector<double>> chunk_compute_ms;  // [chunk][iteration]
  std::vector<std::vector<double>> chunk_comm_ms;  // [chunk][iteration]
  std::vector<double> forward_ms, update_ms;
  std::vector<ob::TimelineEvent> events;
  std::uint64_t wrong = 0;  // comm mode: elements of the all-reduced pattern that differ from the exact sum
  std::string first_wrong;
  bool ranks_agree = true;  // --check: weights bitwise identical on every rank after every step
};

// Runs `mode`; `steps` overrides warm-up + iterations (no timing kept) when positive.
ModeRun run_mode(ob::Mode mode, Backend& backend, const Config& config, MPI_Comm comm,
                 ob::SteadyClock::time_point origin, bool check, int steps = 0);

// True when a thread may drop to SCHED_IDLE and return to its policy (root, or an RLIMIT_NICE allowing nice 0).
bool compute_can_yield();

// The CPUs this rank may run on (its affinity mask).
int rank_cores();

// FNV-1a hash of the weights' bytes: equal on every rank iff the weights are bitwise identical (with overwhelming
// probability); compared through MPI_Allreduce MIN and MAX.
std::uint64_t weights_hash(const std::vector<float>& w);
bool same_on_every_rank(std::uint64_t value, MPI_Comm comm);

// The comm-only input of `rank` and the exact sum over `ranks` of them.
std::vector<float> comm_pattern(const Config& config, int rank);
std::vector<float> comm_pattern_sum(const Config& config, int ranks);

}  // namespace phase3
