#include "common/errors.hpp"

#include <mpi.h>

#include <sstream>

namespace ob {
namespace {

std::string describe(const std::string& library, const std::string& call, const std::string& file, int line, int rank,
                     const std::string& message) {
  std::ostringstream out;
  out << library << " error: " << call << " failed at " << file << ":" << line;
  if (rank >= 0) out << " (rank " << rank << ")";
  out << ": " << message;
  return out.str();
}

}  // namespace

CallFailure::CallFailure(std::string library, std::string call, std::string file, int line, int rank,
                         std::string message)
    : std::runtime_error(describe(library, call, file, line, rank, message)), library_(std::move(library)),
      call_(std::move(call)), file_(std::move(file)), line_(line), rank_(rank), message_(std::move(message)) {}

int current_rank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void throw_call_failure(const char* library, const char* call, const char* file, int line, const std::string& message) {
  throw CallFailure(library, call, file, line, current_rank(), message);
}

}  // namespace ob
