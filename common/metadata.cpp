#include "common/metadata.hpp"

#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <ctime>

extern char** environ;

#include "common/git_commit.hpp"

namespace ob {

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string build_commit() { return kGitCommit; }

nlohmann::json build_info() {
  return {{"type", OVERLAP_BUILD_TYPE}, {"compiler", OVERLAP_CXX_COMPILER},
          {"cuda_architectures", OVERLAP_CUDA_ARCHITECTURES}};
}

nlohmann::json run_environment() {
  static const char* const prefixes[] = {"NCCL_", "OMPI_", "UCX_", "OMP_", "CUDA_", "SLURM_", "OVERLAP_", "PMIX_"};
  nlohmann::json variables = nlohmann::json::object();
  for (char** entry = environ; *entry; ++entry) {
    const std::string text = *entry;
    const auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = text.substr(0, equals);
    for (const char* prefix : prefixes) {
      if (name.rfind(prefix, 0) == 0) variables[name] = text.substr(equals + 1);
    }
  }
  return variables;
}

std::string version_text(const std::string& program) {
  const auto build = build_info();
  std::string text = program + " (overlap-bench " OVERLAP_VERSION ") commit " + build_commit() + ", " +
                     build["type"].get<std::string>() + " build, " + build["compiler"].get<std::string>();
  const std::string cuda = build["cuda_architectures"];
  if (!cuda.empty()) text += ", CUDA architectures " + cuda;
  return text;
}

nlohmann::json base_metadata(const std::string& phase, int argc, char** argv) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  nlohmann::json command = nlohmann::json::array();
  for (int i = 0; i < argc; ++i) command.push_back(argv[i]);
  nlohmann::json meta = {
      {"suite", "overlap-bench"}, {"schema_version", kMetadataSchemaVersion},
      {"phase", phase},           {"commit", build_commit()},
      {"host", host},             {"date_utc", utc_timestamp()},
      {"command_line", command},  {"omp_threads", omp_get_max_threads()},
      {"build", build_info()},    {"environment", run_environment()},
  };
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<std::size_t>(length));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    meta["mpi_library"] = text;
    meta["ranks"] = ranks;
  } else {
    meta["ranks"] = 1;
  }
  return meta;
}

}  // namespace ob
