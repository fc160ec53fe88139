// GoogleTest main for tests launched under mpirun: every rank runs every test; only rank 0 prints the results,
// and the exit code is non-zero if any rank failed. When no test ran on any rank (every one skipped, e.g. no GPU)
// it exits 77, which CTest's SKIP_RETURN_CODE reports as Skipped rather than Passed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/errors.hpp"
#include "common/mpi_session.hpp"

int main(int argc, char** argv) {
  ob::MpiSession mpi(argc, argv, MPI_THREAD_MULTIPLE);
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  const auto* unit = ::testing::UnitTest::GetInstance();
  int ran = unit->test_to_run_count() - unit->skipped_test_count();
  int any_failed = 0, any_ran = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&ran, &any_ran, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed) return 1;
  return any_ran > 0 ? 0 : ob::kExitSkipped;
}
