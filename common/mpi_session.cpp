#include "common/mpi_session.hpp"

#include <unistd.h>

#include <string>

#include "common/errors.hpp"
#include "common/mpi_check.hpp"

namespace ob {

MpiSession::MpiSession(int& argc, char**& argv, int required) {
  MPI_CHECK(MPI_Init_thread(&argc, &argv, required, &provided_));
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  if (provided_ < required) {
    throw_call_failure(
        "MPI", "MPI_Init_thread", __FILE__, __LINE__,
        "thread level " + std::to_string(required) + " needed, library provides " + std::to_string(provided_));
  }
}

int local_rank(MPI_Comm comm) {
  MPI_Comm node;
  int rank = 0, local = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &local));
  MPI_CHECK(MPI_Comm_free(&node));
  return local;
}

int gpu_for_rank(int local_rank, int devices) { return devices > 0 ? local_rank % devices : -1; }

std::string shared_gpu(const std::vector<std::string>& ids) {
  for (std::size_t a = 0; a < ids.size(); ++a) {
    for (std::size_t b = a + 1; b < ids.size(); ++b) {
      if (ids[a] == ids[b]) {
        return "local ranks " + std::to_string(a) + " and " + std::to_string(b) + " share GPU " + ids[a];
      }
    }
  }
  return "";
}

std::vector<std::string> gather_on_node(const std::string& text, MPI_Comm comm) {
  MPI_Comm node;
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_size(node, &size));
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(size), offsets(size, 0);
  MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, node));
  int total = 0;
  for (int r = 0; r < size; ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_CHECK(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, node));
  MPI_CHECK(MPI_Comm_free(&node));
  std::vector<std::string> texts;
  for (int r = 0; r < size; ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

std::string first_nonempty(const std::string& text, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int mine = text.empty() ? size : rank, first = size;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return "";
  int length = rank == first ? static_cast<int>(text.size()) : 0;
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  std::string result = rank == first ? text : std::string(static_cast<std::size_t>(length), '\0');
  MPI_CHECK(MPI_Bcast(result.data(), length, MPI_CHAR, first, comm));
  return result;
}

std::vector<std::string> gather_strings(const std::string& text, MPI_Comm comm, int root) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank == root ? size : 0), offsets(lengths.size(), 0);
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm));
  std::string all;
  if (rank == root) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_CHECK(
      MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root, comm));
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::vector<std::string> rank_hosts(MPI_Comm comm) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return gather_strings(host, comm, 0);
}

nlohmann::json gather_json(const nlohmann::json& mine, MPI_Comm comm) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& text : gather_strings(mine.dump(), comm, 0)) all.push_back(nlohmann::json::parse(text));
  return all;
}

std::vector<std::vector<std::string>> rank_command_lines(int argc, char** argv, MPI_Comm comm) {
  std::vector<std::vector<std::string>> lines;
  for (const auto& line : gather_json(std::vector<std::string>(argv, argv + argc), comm)) lines.push_back(line);
  return lines;
}

}  // namespace ob
