// A device buffer that NCCL's collectives read and write: plain cudaMalloc, or ncclMemAlloc registered with the
// communicator as a symmetric window (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC; a collective call on every
// rank), which NCCL's symmetric kernels and copy-engine collectives need. Freed (and deregistered) on destruction;
// the communicator must outlive it. Zero-filled at allocation.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <utility>

#include "common/cuda/cuda_check.hpp"

namespace phase4 {

template <typename T>
class CommBuffer {
 public:
  CommBuffer() = default;
  // `symmetric_on`: the communicator to register with (null: plain cudaMalloc).
  CommBuffer(std::size_t count, ncclComm_t symmetric_on) : count_(count), comm_(symmetric_on) {
    if (count == 0) return;
    if (comm_) {
      NCCL_CHECK(ncclMemAlloc(reinterpret_cast<void**>(&data_), bytes()));
      try {
        NCCL_CHECK(ncclCommWindowRegister(comm_, data_, bytes(), &window_, NCCL_WIN_COLL_SYMMETRIC));
      } catch (...) {
        release();  // a constructor that throws runs no destructor
        throw;
      }
    } else {
      CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
    }
    CUDA_CHECK(cudaMemset(data_, 0, bytes()));
  }
  ~CommBuffer() { release(); }
  CommBuffer(CommBuffer&& other) noexcept { *this = std::move(other); }
  CommBuffer& operator=(CommBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(comm_, other.comm_);
    std::swap(window_, other.window_);
    return *this;
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;

  T* get() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (!data_) return;
    if (comm_) {
      if (window_) ncclCommWindowDeregister(comm_, window_);
      ncclMemFree(data_);
    } else {
      cudaFree(data_);
    }
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
  ncclComm_t comm_ = nullptr;
  ncclWindow_t window_ = nullptr;
};

}  // namespace phase4
