// One flow for the MPI phases (DESIGN.md, "Flow of one run"): a phase's main declares its options and its run, and
// ob::run_mpi_phase does the rest the same way for every phase: MPI up, options parsed and checked on every rank
// (exit 2 before any work), the output paths resolved, a watchdog over every rank, the run, a fault that never
// fired refused, every rank's host, command line and device gathered into the metadata, the outputs written as
// one set when every check passed, the console's header, table and outputs line, and the exit code (DESIGN.md).
#pragma once

#include <mpi.h>

#include "common/phase_runner.hpp"

namespace ob {

// An MPI phase: the one flow of phase_runner.hpp on every rank, with MPI up at `thread_level`, the options agreed
// by every rank, the watchdog's stall ending the whole job, and every rank's host, command line and device gathered
// into the metadata.
struct MpiPhase : Phase {
  int thread_level = MPI_THREAD_SINGLE;
};

// The phase's main: its exit code (DESIGN.md, "Exit codes").
int run_mpi_phase(int argc, char** argv, const MpiPhase& phase);

}  // namespace ob
