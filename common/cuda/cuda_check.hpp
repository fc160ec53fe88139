// CUDA_CHECK, CUBLAS_CHECK, NCCL_CHECK: evaluate the call once; on failure throw ob::CallFailure with the call text,
// file:line, rank and the decoded message (cudaGetErrorString, cublasGetStatusString, ncclGetErrorString).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace ob {
void check_cuda(cudaError_t code, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t code, const char* call, const char* file, int line);
void check_nccl(ncclResult_t code, const char* call, const char* file, int line);
}  // namespace ob

#define CUDA_CHECK(call) ::ob::check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::ob::check_cublas((call), #call, __FILE__, __LINE__)
#define NCCL_CHECK(call) ::ob::check_nccl((call), #call, __FILE__, __LINE__)
// After a kernel launch: the launch's own error (bad configuration), without synchronising.
#define CUDA_CHECK_LAUNCH() ::ob::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
