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

int local_rank(MPI_Comm comm) {
  MPI_Comm node;
  int rank = 0, local = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &local));
  MPI_CHECK(MPI_Comm_free(&node));
  return local;
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace ob
