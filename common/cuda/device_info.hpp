// Which CUDA devices this process sees, and their description for the metadata sidecar.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ob {

struct CudaProbe {
  int devices = 0;
  std::string error;  // decoded reason when devices == 0
};

// Never throws: no driver or no device gives devices == 0 and the reason.
CudaProbe probe_cuda();

// The one line a GPU phase prints before exiting 77 ("<program>: no CUDA device available (<reason>)").
std::string no_device_message(const std::string& program, const CudaProbe& probe);

// Name, compute capability, memory, SM count and clocks of `device`, plus driver, runtime, cuBLAS and NCCL versions.
nlohmann::json cuda_metadata(int device);

}  // namespace ob
