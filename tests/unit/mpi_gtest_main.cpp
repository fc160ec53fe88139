// GoogleTest main for tests launched under mpirun: every rank runs every test; only rank 0 prints the results,
// and the exit code is non-zero if any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/mpi_session.hpp"

int main(int argc, char** argv) {
  ob::MpiSession mpi(argc, argv, MPI_THREAD_MULTIPLE);
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed;
}
