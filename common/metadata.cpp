#include "common/metadata.hpp"

#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

std::string source_digest() { return kSourceDigest; }

nlohmann::json build_info() {
  return {{"type", OVERLAP_BUILD_TYPE},
          {"compiler", OVERLAP_CXX_COMPILER},
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

nlohmann::json launcher_info(pid_t parent) {
  // The parent's argv: /proc/<pid>/cmdline holds it NUL-separated.
  std::ifstream file("/proc/" + std::to_string(parent) + "/cmdline", std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  const std::string text = content.str();
  nlohmann::json parent_command = nlohmann::json::array();
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = std::min(text.find('\0', begin), text.size());
    parent_command.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  // The launcher: the parent when it is one (mpirun and friends, torchrun), else Slurm's step as its environment
  // describes it, else none (run directly, or from a shell or script).
  std::string name = "none";
  nlohmann::json command = nlohmann::json::array();
  static const char* const launchers[] = {"mpirun", "mpiexec", "orterun", "prterun", "srun", "torchrun"};
  for (std::size_t i = 0; i < parent_command.size() && i < 3 && name == "none"; ++i) {
    const std::string word = std::filesystem::path(parent_command[i].get<std::string>()).filename().string();
    for (const char* launcher : launchers) {
      if (word == launcher || (word == "torch.distributed.run" && std::string(launcher) == "torchrun")) {
        name = launcher;
        command = nlohmann::json(
            std::vector<nlohmann::json>(parent_command.begin() + static_cast<long>(i), parent_command.end()));
      }
    }
  }
  if (name == "none" && std::getenv("SLURM_STEP_ID")) {
    name = "srun";
    command = {"srun"};
    for (const char* variable : {"SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS"}) {
      if (const char* value = std::getenv(variable)) {
        command.push_back(std::string(variable) == "SLURM_STEP_NUM_NODES" ? "--nodes" : "--ntasks");
        command.push_back(value);
      }
    }
  }
  return {{"name", name}, {"command_line", command}, {"parent_command_line", parent_command}};
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown";
}

nlohmann::json base_metadata(const std::string& phase, int argc, char** argv) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  nlohmann::json command = nlohmann::json::array();
  for (int i = 0; i < argc; ++i) command.push_back(argv[i]);
  nlohmann::json meta = {
      {"suite", "overlap-bench"},
      {"schema_version", kMetadataSchemaVersion},
      {"phase", phase},
      {"commit", build_commit()},
      {"source_digest", source_digest()},
      {"host", host},
      {"date_utc", utc_timestamp()},
      {"command_line", command},
      {"omp_threads", omp_get_max_threads()},
      {"build", build_info()},
      {"environment", run_environment()},
      {"launcher", launcher_info(getppid())},
      {"working_directory", std::filesystem::current_path().string()},
      {"cpu_model", cpu_model()},
      {"cores", static_cast<int>(std::thread::hardware_concurrency())},
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
