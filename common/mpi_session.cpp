#include "common/mpi_session.hpp"

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
    throw_call_failure("MPI", "MPI_Init_thread", __FILE__, __LINE__,
                       "thread level " + std::to_string(required) + " needed, library provides " +
                           std::to_string(provided_));
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace ob
