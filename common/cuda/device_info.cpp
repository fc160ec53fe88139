#include "common/cuda/device_info.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#ifdef OVERLAP_HAVE_NVML
#include <nvml.h>
#endif

#include "common/csv_writer.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/options.hpp"

namespace ob {

CudaProbe probe_cuda() {
  CudaProbe probe;
  const cudaError_t code = cudaGetDeviceCount(&probe.devices);
  if (code != cudaSuccess) {
    probe.devices = 0;
    // Without an NVIDIA driver the runtime answers "CUDA driver version is insufficient", which reads like a broken
    // driver: say what is missing instead (the kernel module publishes /proc/driver/nvidia when it is loaded).
    const bool no_driver = (code == cudaErrorInsufficientDriver || code == cudaErrorNoDevice) &&
        access("/proc/driver/nvidia/version", F_OK) != 0;
    probe.error = no_driver
        ? std::string("no NVIDIA driver or GPU found on this machine; CUDA said ") + cudaGetErrorName(code)
        : std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
  } else if (probe.devices == 0) {
    probe.error = "cudaGetDeviceCount returned 0 devices";
  }
  return probe;
}

std::string no_device_message(const std::string& program, const CudaProbe& probe) {
  return program + ": no CUDA device available (" + probe.error + ")";
}

namespace {

// The driver's own version ("580.95.05"): NVML where it is built, else the kernel module's /proc line, else unknown.
// (cudaDriverGetVersion gives the CUDA API version the driver supports, not the driver.)
std::string driver_version() {
#ifdef OVERLAP_HAVE_NVML
  if (nvmlInit_v2() == NVML_SUCCESS) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {0};
    const bool ok = nvmlSystemGetDriverVersion(version, sizeof version) == NVML_SUCCESS;
    nvmlShutdown();
    if (ok) return version;
  }
#endif
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  std::getline(file, line);  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  ..."
  const auto module = line.find("Kernel Module");
  if (module != std::string::npos) {
    std::string rest = line.substr(module + 13);
    rest.erase(0, rest.find_first_not_of(' '));
    return rest.substr(0, rest.find(' '));
  }
  return "unknown";
}

std::string uuid_text(const cudaUUID_t& uuid) {
  char text[64];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

}  // namespace

nlohmann::json cuda_metadata(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0, nccl = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  NCCL_CHECK(ncclGetVersion(&nccl));
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
  return {
      {"gpu_name", prop.name},
      {"gpu_index", device},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"gpu_memory_MiB", prop.totalGlobalMem >> 20},
      {"multiprocessors", prop.multiProcessorCount},
      {"sm_clock_max_MHz", clock_khz / 1000},
      {"memory_clock_max_MHz", mem_clock_khz / 1000},
      {"pci_bus_id", prop.pciBusID},
      {"uuid", uuid_text(prop.uuid)},
      {"driver_version", driver_version()},
      {"cuda_driver", version(driver)},
      {"cuda_runtime", version(runtime)},
      {"cublas",
       std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + "." +
           std::to_string(CUBLAS_VER_PATCH)},
      {"nccl",
       std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) + "." + std::to_string(nccl % 100)},
  };
}

void require_fits_on_device(const std::string& option, const std::string& value, double bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  require(bytes <= static_cast<double>(free_bytes), option, value,
          "needs " + format_number(bytes / (1u << 30), 4) + " GiB of device memory; " +
              format_number(static_cast<double>(free_bytes) / (1u << 30), 4) + " GiB are free");
}

}  // namespace ob
