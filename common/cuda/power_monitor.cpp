#include "common/cuda/power_monitor.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/csv_schema.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/mpi_session.hpp"

#ifdef OVERLAP_HAVE_NVML
#include <nvml.h>
#endif

namespace ob {

PowerMonitor::PowerMonitor(int device, int rank, SteadyClock::time_point origin, std::chrono::milliseconds period)
    : device_(device), rank_(rank), origin_(origin) {
#ifdef OVERLAP_HAVE_NVML
  char bus_id[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  nvmlReturn_t status = nvmlInit_v2();
  nvmlDevice_t handle = nullptr;
  if (status == NVML_SUCCESS) status = nvmlDeviceGetHandleByPciBusId_v2(bus_id, &handle);
  unsigned long long energy = 0;
  if (status == NVML_SUCCESS) status = nvmlDeviceGetTotalEnergyConsumption(handle, &energy);
  if (status != NVML_SUCCESS) {
    why_ = std::string("NVML: ") + nvmlErrorString(status);
    return;
  }
  handle_ = handle;
  available_ = true;
  thread_ = std::thread([this, period] { sample_until_stopped(period); });
#else
  (void)period;
  why_ = "built without NVML (nvml.h was not found)";
#endif
}

PowerMonitor::~PowerMonitor() {
  samples();
#ifdef OVERLAP_HAVE_NVML
  if (available_) nvmlShutdown();
#endif
}

double PowerMonitor::energy_j() const {
#ifdef OVERLAP_HAVE_NVML
  unsigned long long millijoules = 0;
  if (available_ &&
      nvmlDeviceGetTotalEnergyConsumption(static_cast<nvmlDevice_t>(handle_), &millijoules) == NVML_SUCCESS) {
    return millijoules / 1000.0;
  }
#endif
  return std::nan("");
}

#ifdef OVERLAP_HAVE_NVML
namespace {

// The GPU's power now, in watts (NaN if NVML cannot say). nvmlDeviceGetPowerUsage averages over one second on
// Ampere and later, too slow to tell one mode from the next: the instantaneous field is read where it exists.
double power_now(nvmlDevice_t device) {
#ifdef NVML_FI_DEV_POWER_INSTANT
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_POWER_INSTANT;
  if (nvmlDeviceGetFieldValues(device, 1, &field) == NVML_SUCCESS && field.nvmlReturn == NVML_SUCCESS) {
    switch (field.valueType) {
      case NVML_VALUE_TYPE_UNSIGNED_INT: return field.value.uiVal / 1000.0;
      case NVML_VALUE_TYPE_UNSIGNED_LONG: return field.value.ulVal / 1000.0;
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return field.value.ullVal / 1000.0;
      default: break;
    }
  }
#endif
  unsigned int milliwatts = 0;
  return nvmlDeviceGetPowerUsage(device, &milliwatts) == NVML_SUCCESS ? milliwatts / 1000.0 : std::nan("");
}

}  // namespace
#endif

void PowerMonitor::sample_until_stopped(std::chrono::milliseconds period) {
#ifdef OVERLAP_HAVE_NVML
  auto next = SteadyClock::now();
  while (!stop_.load()) {
    const auto now = SteadyClock::now();
    const double watts = power_now(static_cast<nvmlDevice_t>(handle_));
    if (std::isfinite(watts)) {
      std::lock_guard<std::mutex> lock(mutex_);
      samples_.push_back({rank_, device_, micros_since(origin_, now), watts});
    }
    next += period;
    std::this_thread::sleep_until(next);
  }
#else
  (void)period;
#endif
}

std::vector<PowerSample> PowerMonitor::samples() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

std::vector<PowerSample> gather_power(const std::vector<PowerSample>& local, MPI_Comm comm) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& s : local) mine.push_back({s.rank, s.gpu, s.t_us, s.power_w});
  std::vector<PowerSample> all;
  for (const auto& text : gather_strings(mine.dump(), comm, 0)) {
    for (const auto& item : nlohmann::json::parse(text)) {
      all.push_back({item[0].get<int>(), item[1].get<int>(), item[2].get<double>(), item[3].get<double>()});
    }
  }
  return all;
}

CsvTable power_csv(const std::vector<PowerSample>& samples) {
  CsvTable table(csv_schema_columns("power", "columns"));
  for (const auto& s : samples) {
    table.add_row({std::to_string(s.rank), std::to_string(s.gpu), format_number(s.t_us), format_number(s.power_w)});
  }
  return table;
}

}  // namespace ob
