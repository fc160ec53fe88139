#include <gtest/gtest.h>

#include <string>

#include "common/errors.hpp"
#include "common/mpi_check.hpp"

namespace {
int calls = 0;
int failing_mpi_call() {
  ++calls;
  return MPI_ERR_COUNT;
}
}  // namespace

TEST(MpiCheck, NamesCallFileLineAndDecodedMessage) {
  calls = 0;
  try {
    MPI_CHECK(failing_mpi_call());
    FAIL() << "expected a CallFailure";
  } catch (const ob::CallFailure& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.library(), "MPI");
    EXPECT_EQ(error.call(), "failing_mpi_call()");
    EXPECT_NE(error.file().find("test_errors.cpp"), std::string::npos);
    EXPECT_GT(error.line(), 0);
    EXPECT_EQ(error.rank(), -1);  // MPI is not running in this test
    EXPECT_NE(what.find("failing_mpi_call()"), std::string::npos) << what;
    EXPECT_NE(what.find("test_errors.cpp:"), std::string::npos) << what;
    EXPECT_NE(error.message().find("code " + std::to_string(MPI_ERR_COUNT)), std::string::npos) << error.message();
  }
  EXPECT_EQ(calls, 1) << "the checked call must be evaluated exactly once";
}

TEST(MpiCheck, SuccessPassesThrough) { EXPECT_NO_THROW(MPI_CHECK(MPI_SUCCESS)); }

TEST(CallFailure, MessageShape) {
  ob::CallFailure error("NCCL", "ncclAllReduce(...)", "x.cu", 42, 3, "unhandled cuda error");
  EXPECT_STREQ(error.what(), "NCCL error: ncclAllReduce(...) failed at x.cu:42 (rank 3): unhandled cuda error");
}
