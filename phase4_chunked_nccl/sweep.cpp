#include "phase4_chunked_nccl/sweep.hpp"

#include <memory>

#include "common/cuda/cuda_check.hpp"
#include "common/options.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/nccl_comm.hpp"
#include "phase4_chunked_nccl/runner.hpp"

namespace phase4 {

void require_sm_margin(const std::vector<Config>& points) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (const auto& point : points) {
    ob::require(point.gemm_sm_margin < sms, "--gemm-sm-margin", std::to_string(point.gemm_sm_margin),
                "fewer than this GPU's " + std::to_string(sms) + " SMs");
  }
}

SweepResult run_sweep(const std::vector<Config>& points, int rank, int ranks, MPI_Comm comm,
                      ob::SteadyClock::time_point origin, const ob::PowerMonitor* power,
                      std::atomic<ncclComm_t>& live_comm, std::ostream* progress) {
  SweepResult result;
  std::unique_ptr<NcclComm> nccl;
  for (std::size_t p = 0; p < points.size(); ++p) {
    const Config& point = points[p];
    if (!nccl || !(nccl->settings() == point.nccl_settings())) {  // the first point, or a sweep of an NCCL setting
      live_comm = nullptr;
      nccl.reset();
      ob::progress_note("NCCL set-up");
      nccl = std::make_unique<NcclComm>(rank, ranks, comm, point.nccl_settings());
      live_comm = nccl->get();
    }
    // A trainer per point: an accum-steps sweep changes how many micro-batches the model holds, a sync sweep the
    // strategy's buffers.
    Trainer trainer(point, rank, ranks, nccl->get(), comm, power);
    if (progress) {
      *progress << "phase4: [" << p + 1 << "/" << points.size() << "] " << point.point_label() << ", "
                << trainer.adapt(point.plan()).describe() << std::endl;
    }
    auto point_result = run_point(point, trainer, comm, origin, progress);
    result.rows.insert(result.rows.end(), point_result.rows.begin(), point_result.rows.end());
    if (points.size() == 1) result.events = std::move(point_result.events);
    if (result.failure.empty() && !point_result.failure.empty()) {
      result.failure = point.point_label() + ": " + point_result.failure;
    }
  }
  live_comm = nullptr;
  return result;
}

}  // namespace phase4
