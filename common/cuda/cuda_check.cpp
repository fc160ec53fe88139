#include "common/cuda/cuda_check.hpp"

#include <string>

#include "common/errors.hpp"

namespace ob {

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  throw_call_failure("CUDA", call, file, line, std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
}

void check_cublas(cublasStatus_t code, const char* call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return;
  throw_call_failure("cuBLAS", call, file, line,
                     std::string(cublasGetStatusName(code)) + ": " + cublasGetStatusString(code));
}

void check_nccl(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess || code == ncclInProgress) return;
  throw_call_failure("NCCL", call, file, line, ncclGetErrorString(code));
}

}  // namespace ob
