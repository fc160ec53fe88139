// NVTX annotations for Nsight Systems / Nsight Compute: ranges on the calling thread (per layer, bucket, chunk,
// step) and names for threads. NVTX v3 is header-only and costs a null check while no tool is attached; a build
// without the CUDA toolkit's NVTX headers compiles these to nothing. CUDA streams are named in common/cuda.
#pragma once

#include <string>

namespace ob {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Names the calling OS thread in the profiler's timeline ("phase3 progress", "phase2 thread 1").
void nvtx_name_thread(const std::string& name);

}  // namespace ob
