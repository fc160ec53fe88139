#include "common/metadata.hpp"

#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <ctime>

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

nlohmann::json base_metadata(const std::string& phase, int argc, char** argv) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  nlohmann::json command = nlohmann::json::array();
  for (int i = 0; i < argc; ++i) command.push_back(argv[i]);
  nlohmann::json meta = {
      {"suite", "overlap-bench"}, {"phase", phase},        {"commit", build_commit()},
      {"host", host},             {"date_utc", utc_timestamp()}, {"command_line", command},
      {"omp_threads", omp_get_max_threads()},
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
