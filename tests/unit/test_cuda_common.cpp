// CUDA, cuBLAS and NCCL check macros (no device needed), and the event log (skips without a device).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_info.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/errors.hpp"

TEST(CudaCheck, DecodesCudaError) {
  try {
    CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL();
  } catch (const ob::CallFailure& error) {
    EXPECT_EQ(error.library(), "CUDA");
    EXPECT_EQ(error.call(), "cudaErrorMemoryAllocation");
    EXPECT_NE(error.message().find("cudaErrorMemoryAllocation: out of memory"), std::string::npos) << error.message();
    EXPECT_NE(std::string(error.what()).find("test_cuda_common.cpp:"), std::string::npos);
  }
}

TEST(CudaCheck, DecodesCublasAndNcclErrors) {
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL();
  } catch (const ob::CallFailure& error) {
    EXPECT_EQ(error.library(), "cuBLAS");
    EXPECT_NE(error.message().find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << error.message();
  }
  try {
    NCCL_CHECK(ncclInvalidArgument);
    FAIL();
  } catch (const ob::CallFailure& error) {
    EXPECT_EQ(error.library(), "NCCL");
    EXPECT_NE(error.message().find("invalid argument"), std::string::npos) << error.message();
  }
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(NCCL_CHECK(ncclSuccess));
}

TEST(CudaProbe, ReportsAReasonWhenNoDevice) {
  const auto probe = ob::probe_cuda();
  if (probe.devices > 0) {
    EXPECT_TRUE(probe.error.empty());
  } else {
    EXPECT_FALSE(probe.error.empty());
    EXPECT_EQ(ob::no_device_message("phaseX", probe).rfind("phaseX: no CUDA device available (", 0), 0u);
    // Without the NVIDIA kernel module (machines with no GPU) the message says so, not "driver insufficient".
    if (access("/proc/driver/nvidia/version", F_OK) != 0) {
      EXPECT_EQ(probe.error.rfind("no NVIDIA driver or GPU found on this machine", 0), 0u) << probe.error;
    }
  }
}

TEST(EventLog, MeasuresASleepKernelGap) {
  if (ob::probe_cuda().devices == 0) GTEST_SKIP() << "no CUDA device";
  ob::EventLog log;
  const int a = log.record(nullptr);
  const int b = log.record(nullptr);
  log.synchronize();
  EXPECT_EQ(log.size(), 2);
  EXPECT_GE(log.ms_between(a, b), 0.0f);
  EXPECT_LT(log.ms_between(a, b), 100.0f);
  log.clear();
  EXPECT_EQ(log.size(), 0);
  EXPECT_EQ(log.record(nullptr), 0);  // events are reused
  EXPECT_EQ(ob::cuda_metadata(0)["gpu_index"], 0);
}
