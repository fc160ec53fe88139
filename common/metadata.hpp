// The metadata sidecar (.meta.json) of every run: what made these numbers (commit, host, date, command line,
// library versions, ranks, threads). Phases add their own keys (GPU names, clocks) to the returned object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ob {

// commit, host, date_utc, command_line, phase, omp_threads, and, when MPI is running, mpi_library and ranks.
nlohmann::json base_metadata(const std::string& phase, int argc, char** argv);

// "2026-11-22T11:30:00Z"
std::string utc_timestamp();

// The commit the binaries were built from (short hash, or "unknown").
std::string build_commit();

}  // namespace ob
