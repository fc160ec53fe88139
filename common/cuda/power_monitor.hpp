// GPU power and energy through NVML: a thread samples one GPU's power every period (20 ms by default) while the
// run goes on, and the energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded) gives the
// energy of any interval. Built with NVML only where nvml.h is found; elsewhere, and whenever NVML fails,
// available() is false and why() says why.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/csv_writer.hpp"
#include "common/timer.hpp"

namespace ob {

struct PowerSample {
  int rank = 0, gpu = 0;
  double t_us = 0;  // microseconds since the run's origin (the timeline's clock)
  double power_w = 0;
};

class PowerMonitor {
 public:
  PowerMonitor(int device, int rank, SteadyClock::time_point origin,
               std::chrono::milliseconds period = std::chrono::milliseconds(20));
  ~PowerMonitor();
  PowerMonitor(const PowerMonitor&) = delete;
  PowerMonitor& operator=(const PowerMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& why() const { return why_; }
  double energy_j() const;  // the GPU's energy counter in joules (NaN when unavailable)
  std::vector<PowerSample> samples();  // stops sampling and returns every sample

 private:
  void sample_until_stopped(std::chrono::milliseconds period);

  int device_, rank_;
  SteadyClock::time_point origin_;
  bool available_ = false;
  std::string why_;
  void* handle_ = nullptr;  // nvmlDevice_t
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<PowerSample> samples_;
  std::thread thread_;
};

// Every rank's samples on rank 0 (others get an empty list), and the power CSV: rank, gpu, t_us, power_w.
std::vector<PowerSample> gather_power(const std::vector<PowerSample>& local, MPI_Comm comm);
CsvTable power_csv(const std::vector<PowerSample>& samples);

}  // namespace ob
