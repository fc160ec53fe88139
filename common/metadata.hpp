// The metadata sidecar (.meta.json) of every run: what made these numbers (commit, host, date, command line,
// library versions, ranks, threads). Phases add their own keys (GPU names, clocks) to the returned object.
#pragma once

#include <nlohmann/json.hpp>
#include <sys/types.h>

#include <string>

namespace ob {

// schema_version, commit, host, date_utc, command_line, phase, omp_threads, build, environment, launcher,
// working_directory, cpu_model, and, when MPI is running, mpi_library and ranks.
nlohmann::json base_metadata(const std::string& phase, int argc, char** argv);

// What started process `parent`'s child: {"name": mpirun|mpiexec|orterun|prterun|srun|torchrun|none,
// "command_line": the launcher's argv (srun: as Slurm's step variables describe it), "parent_command_line"}.
nlohmann::json launcher_info(pid_t parent);

// /proc/cpuinfo's first "model name" ("unknown" without one).
std::string cpu_model();

// How the binaries were built: type, compiler, CUDA architectures ("" without CUDA).
nlohmann::json build_info();

// The environment variables that change how a run behaves (prefixes NCCL_, OMPI_, UCX_, OMP_, CUDA_, SLURM_,
// OVERLAP_, PMIX_ and CUDA_VISIBLE_DEVICES), name to value.
nlohmann::json run_environment();

// --version's text: "<program> (overlap-bench <version>) commit <c>, <build type> build, <compiler>[, CUDA <archs>]".
std::string version_text(const std::string& program);

// The metadata's layout version: readers check it before they rely on a key.
inline constexpr int kMetadataSchemaVersion = 2;

// "2026-11-22T11:30:00Z"
std::string utc_timestamp();

// The commit the binaries were built from (short hash, or "unknown"; "-dirty" when the sources differ from it,
// "-unverified" when the build could not check them: cmake/GitCommit.cmake).
std::string build_commit();

// The digest of the binaries' sources the build saw (cmake/GitCommit.cmake): equal digests, equal sources.
std::string source_digest();

}  // namespace ob
