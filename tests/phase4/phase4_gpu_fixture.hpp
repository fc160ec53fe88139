// The fixture of phase 4's GPU tests (test_phase4_gpu.cpp, test_transformer_gpu.cpp): a rank's device and NCCL
// communicator, a small configuration with --check, one point run on a trainer of its own. Skips without a device,
// or with more ranks than devices.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_info.hpp"
#include "phase4_chunked_nccl/driver/nccl_comm.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"

namespace phase4_test {

class Phase4Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto probe = ob::probe_cuda();
    if (probe.devices == 0) GTEST_SKIP() << "no CUDA device";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    if (ranks_ > probe.devices) GTEST_SKIP() << "NCCL needs one GPU per rank";
    CUDA_CHECK(cudaSetDevice(rank_ % probe.devices));
    nccl_ = std::make_unique<phase4::NcclComm>(rank_, ranks_, MPI_COMM_WORLD, small().nccl_settings());
  }
  phase4::Config small() const {
    phase4::Config config;
    config.hidden = 192;
    config.layers = 5;
    config.batch = 96;
    config.bucket_mb = 0.2;  // 52,428 elements: buckets span layers of 36,864
    config.first_bucket_mb = 0.01;
    config.common.iters = 4;
    config.common.warmup = 1;
    config.common.check = true;
    return config;
  }
  // One point of `config` on a trainer of its own, with a communicator of its NCCL settings where they differ from
  // the fixture's.
  phase4::PointResult run_on_own_trainer(const phase4::Config& config) {
    std::unique_ptr<phase4::NcclComm> own;
    if (!(config.nccl_settings() == nccl_->settings())) {
      own = std::make_unique<phase4::NcclComm>(rank_, ranks_, MPI_COMM_WORLD, config.nccl_settings());
    }
    phase4::Trainer trainer(config.step_spec(), rank_, ranks_, own ? own->get() : nccl_->get(), MPI_COMM_WORLD);
    return phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  }
  int rank_ = 0, ranks_ = 1;
  std::unique_ptr<phase4::NcclComm> nccl_;
};

// The row of `mode` in a point's summary rows (a test failure when it has none).
inline const ob::SummaryRow& row_of(const phase4::PointResult& result, const std::string& mode) {
  for (const auto& row : result.rows) {
    if (ob::mode_name(row.mode) == mode) return row;
  }
  throw std::runtime_error("no " + mode + " row");
}

// Per (rank, iteration) of a point's overlapped breakdown steps, the span of its forward and of its backward steps
// (timeline microseconds).
struct StepSpans {
  std::map<std::pair<int, int>, std::pair<double, double>> forward, backward;
};
inline StepSpans overlap_spans(const phase4::PointResult& result) {
  StepSpans spans;
  for (const auto& e : result.events) {
    const auto key = std::make_pair(e.rank, e.iter);
    if (e.lane == "overlap:compute" && e.name == "forward") spans.forward[key] = {e.start_us, e.end_us};
    if (e.lane == "overlap:compute" && e.name == "backward") {
      auto& span = spans.backward.emplace(key, std::make_pair(e.start_us, e.end_us)).first->second;
      span = {std::min(span.first, e.start_us), std::max(span.second, e.end_us)};
    }
  }
  return spans;
}

}  // namespace phase4_test
