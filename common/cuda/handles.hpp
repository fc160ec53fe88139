// Owning wrappers for the CUDA and cuBLAS handles (and pinned host memory) a phase holds: each is released by its destructor, so a
// constructor that throws part-way (a failed cudaStreamCreate after the first stream) leaks nothing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <utility>

#include "common/cuda/cuda_check.hpp"

namespace ob {

// A unique owner of a handle, released with Destroy(handle); movable, not copyable.
template <typename Handle, void (*Destroy)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() {
    if (handle_) Destroy(handle_);
  }
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Handle get() const { return handle_; }
  operator Handle() const { return handle_; }  // NOLINT: used where the raw handle is expected

 private:
  Handle handle_{};
};

namespace detail {
inline void destroy_stream(cudaStream_t s) { cudaStreamDestroy(s); }
inline void destroy_event(cudaEvent_t e) { cudaEventDestroy(e); }
inline void destroy_cublas(cublasHandle_t h) { cublasDestroy(h); }
}  // namespace detail

using CudaStream = Owned<cudaStream_t, detail::destroy_stream>;
using CudaEvent = Owned<cudaEvent_t, detail::destroy_event>;
using CublasHandle = Owned<cublasHandle_t, detail::destroy_cublas>;

// A non-blocking stream of the given priority (0: the default priority).
inline CudaStream make_stream(int priority = 0) {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
  return CudaStream(stream);
}

// An event for ordering only (no timing).
inline CudaEvent make_sync_event() {
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return CudaEvent(event);
}

// Pinned host memory (cudaMallocHost), freed with cudaFreeHost.
struct PinnedFree {
  void operator()(void* pointer) const { cudaFreeHost(pointer); }
};
template <typename T>
using PinnedArray = std::unique_ptr<T[], PinnedFree>;
template <typename T>
PinnedArray<T> make_pinned(std::size_t count) {
  T* pointer = nullptr;
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pointer), count * sizeof(T)));
  return PinnedArray<T>(pointer);
}

inline CublasHandle make_cublas() {
  cublasHandle_t handle = nullptr;
  CUBLAS_CHECK(cublasCreate(&handle));
  return CublasHandle(handle);
}

}  // namespace ob
