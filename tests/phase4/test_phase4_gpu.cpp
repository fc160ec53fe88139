// Phase 4 on GPUs under mpirun (1 and 2 ranks): every mode and --sync strategy with --check, both bucket layouts, overlap
// equal to seq, exact all-reduce, the bound between ideal and seq, overlap no faster than compute-only, no bound above
// it (transformers: test_transformer_gpu.cpp; checkers fed corrupted buffers: test_checkers_gpu.cpp). Skips (exit 77)
// without a CUDA device.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_info.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/errors.hpp"
#include "common/timeline.hpp"
#include "common/cuda/handles.hpp"
#include "phase4_chunked_nccl/schedule/checks.cuh"
#include "phase4_chunked_nccl/driver/nccl_comm.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"
#include "phase4_chunked_nccl/driver/sweep.hpp"
#include "tests/phase4/phase4_gpu_fixture.hpp"

namespace {

using phase4_test::Phase4Gpu;
using phase4_test::row_of;

double p50(const std::vector<ob::SummaryRow>& rows, const std::string& mode) {
  for (const auto& row : rows) {
    if (ob::mode_name(row.mode) == mode) return row.time_ms.p50;
  }
  ADD_FAILURE() << "no " << mode << " row";
  return 0;
}

}  // namespace

TEST_F(Phase4Gpu, EveryModeChecksOutWithSizeCappedBuckets) {
  const auto config = small();
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");
  std::vector<std::string> modes;
  for (const auto& row : result.rows) modes.push_back(ob::mode_name(row.mode));
  EXPECT_EQ(modes, (std::vector<std::string>{"compute", "comm", "seq", "overlap", "ideal", "bound", "bound_ref"}));
  for (const auto& row : result.rows) {
    if (row.mode == ob::Mode::kComm) EXPECT_EQ(row.get("wrong"), "0");
    if (row.mode == ob::Mode::kOverlap) {
      // Same reductions in the same order on the same data: bitwise the same weights as seq.
      EXPECT_EQ(row.get("overlap_vs_seq_bitwise"), "1") << row.get("overlap_vs_seq_rel_error");
      EXPECT_EQ(row.get("overlap_vs_seq_rel_error"), "0");
    }
  }
  // Above T_ideal by construction; its place below the step: OverlapNeverBeatsItsComputeOnlyStepAndNoBoundExceedsIt
  // (this shape's steps are the host's launches, not the GPU's work).
  EXPECT_GE(p50(result.rows, "bound"), p50(result.rows, "ideal"));
  if (rank_ == 0) {
    int overlapped_comm = 0;
    for (const auto& e : result.events) overlapped_comm += e.lane == "overlap:comm";
    EXPECT_GT(overlapped_comm, 0);
    // Comm-only buckets follow one another on the comm stream: one event ends each and begins the next.
    const ob::TimelineEvent* previous = nullptr;
    int shared = 0;
    for (const auto& e : result.events) {
      if (e.lane != "comm:comm") continue;
      if (previous && previous->iter == e.iter && e.chunk == previous->chunk + 1) {
        EXPECT_EQ(e.start_us, previous->end_us) << "iteration " << e.iter << ", bucket " << e.chunk;
        ++shared;
      }
      previous = &e;
    }
    EXPECT_GT(shared, 0);
  }
}

TEST_F(Phase4Gpu, ChunkSweepPointsAllCheckOut) {
  auto config = small();
  config.sweeps = {"chunks=1,7,50"};
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  for (const auto& point : config.sweep_points()) {
    const auto result = phase4::run_point(point, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
    EXPECT_EQ(result.failure, "") << point.point_label();
    EXPECT_EQ(result.rows.front().get("buckets"), std::to_string(point.chunks));
  }
}

// --passes: every mode timed in turn twice, its samples the two passes' together (5 = 3 + 2), the timeline's steps
// numbered on after the first pass's, the checks passing in both.
TEST_F(Phase4Gpu, PassesTimeTheModesInTurnAndJoinTheirIterations) {
  auto config = small();
  config.common.iters = 5;
  config.passes = 2;
  const auto result = run_on_own_trainer(config);
  EXPECT_EQ(result.failure, "");
  for (const char* mode : {"compute", "comm", "seq", "overlap"}) EXPECT_EQ(row_of(result, mode).samples.size(), 5u);
  std::set<int> drawn;
  for (const auto& event : result.events) {
    if (event.lane == "overlap:compute") drawn.insert(event.iter);
  }
  if (rank_ == 0) EXPECT_EQ(drawn, std::set<int>({0, 1, 2, 3, 4}));  // the timeline is merged on rank 0
  EXPECT_EQ(phase4::pass_label(1, 3), " (pass 2 of 3)");
  // As the calibration runs them: 2 + 2 + 1 steps a mode, the trainer's own timing back afterwards.
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto runs = phase4::run_passes(trainer, trainer.adapt(config.plan()), {ob::Mode::kCompute, ob::Mode::kComm}, 3,
                                       false, ob::SteadyClock::now());
  EXPECT_EQ(runs[0].iter_ms.size() + runs[1].iter_ms.size(), 10u);
  EXPECT_EQ(trainer.iters(), 5);
}

TEST_F(Phase4Gpu, WeightsAgreeAcrossRanksOnlyWithCommunication) {
  auto config = small();
  config.common.iters = 2;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto plan = config.plan();
  trainer.reset_weights();
  trainer.run(ob::Mode::kOverlap, plan, true, ob::SteadyClock::now(), 2);
  const std::uint64_t synced = trainer.weight_fingerprint();
  // Without the all-reduce each rank steps on its own data: the fingerprints must then differ (2+ ranks), which
  // shows the fingerprint check can fail.
  trainer.run(ob::Mode::kCompute, plan, false, ob::SteadyClock::now(), 1);
  const std::uint64_t local = trainer.weight_fingerprint();
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&local, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo != hi, ranks_ > 1);
  EXPECT_NE(synced, local);
}

TEST_F(Phase4Gpu, Bf16CommunicationReportsItsErrorAndKeepsRanksInStep) {
  auto config = small();
  config.comm_dtype = phase4::WireType::kBf16;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");  // ranks agree bitwise after every step; the comm pattern is exact in bf16
  const auto& overlap = row_of(result, "overlap");
  const double error = std::stod(overlap.get("comm_grad_rel_error"));
  EXPECT_GT(error, 1e-4) << "bf16 rounding must show (8 significant bits)";
  EXPECT_LT(error, 5e-3) << "about 2^-9 per value, not more";
  EXPECT_EQ(overlap.get("overlap_vs_seq_bitwise"), "1");
  EXPECT_EQ(row_of(result, "comm").get("wrong"), "0");
  EXPECT_EQ(overlap.get("comm_dtype"), "bf16");
  // The update reads the bf16 gradient: one seq step lands near the fp32 step, but not on it.
  auto fp32 = small();
  phase4::Trainer reference(fp32.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  reference.reset_weights();
  reference.run(ob::Mode::kSeq, fp32.plan(), false, ob::SteadyClock::now(), 1);
  trainer.reset_weights();
  const auto initial = trainer.download_weights();
  trainer.run(ob::Mode::kSeq, config.plan(), false, ob::SteadyClock::now(), 1);
  const auto want = reference.download_weights(), got = trainer.download_weights();
  double step_norm = 0, diff_norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    step_norm += (static_cast<double>(want[i]) - initial[i]) * (static_cast<double>(want[i]) - initial[i]);
    diff_norm += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
  }
  EXPECT_GT(diff_norm, 0.0);
  EXPECT_LT(std::sqrt(diff_norm / step_norm), 5e-3) << "the step differs by the gradient's bf16 rounding only";
}

TEST_F(Phase4Gpu, AccumulatedMicroStepsEqualOneStepOnTheLargerBatch) {
  auto config = small();
  config.tf32 = false;  // fp32 GEMMs: only the order of additions differs
  config.accum_steps = 3;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");
  const auto& overlap = row_of(result, "overlap");
  EXPECT_LE(std::stod(overlap.get("accum_vs_big_batch_rel_error")), 1e-5);
  EXPECT_EQ(overlap.get("overlap_vs_seq_bitwise"), "1");
  // One micro-batch alone is a different step: the check can tell them apart.
  auto one = small();
  one.tf32 = false;
  phase4::Trainer single(one.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  single.reset_weights();
  single.run(ob::Mode::kSeq, one.plan(), false, ob::SteadyClock::now(), phase4::kEquivalenceSteps);
  trainer.reset_weights();
  trainer.run(ob::Mode::kSeq, config.plan(), false, ob::SteadyClock::now(), phase4::kEquivalenceSteps);
  EXPECT_NE(single.weight_fingerprint(), trainer.weight_fingerprint());
}

TEST_F(Phase4Gpu, GraphReplayGivesTheEagerWeightsAndTimesEveryEvent) {
  auto config = small();
  config.graph = true;
  const auto result = run_on_own_trainer(config);
  EXPECT_EQ(result.failure, "");
  const auto& overlap = row_of(result, "overlap");
  EXPECT_EQ(overlap.get("graph_vs_eager_bitwise"), "1");
  EXPECT_EQ(overlap.get("overlap_vs_seq_bitwise"), "1");
  EXPECT_EQ(row_of(result, "comm").get("wrong"), "0");
  if (rank_ == 0) {  // per-step and per-bucket events come from the graph's own event nodes
    int backward = 0, allreduce = 0;
    for (const auto& e : result.events) {
      EXPECT_GE(e.end_us, e.start_us) << e.lane << " " << e.name;
      backward += e.lane == "overlap:compute" && e.name == "backward";
      allreduce += e.lane == "overlap:comm" && e.name == "allreduce";
    }
    EXPECT_EQ(backward, config.common.iters * config.layers * ranks_);
    EXPECT_EQ(allreduce, config.common.iters * static_cast<int>(config.plan().buckets.size()) * ranks_);
  }
  const double bound = p50(result.rows, "bound"), seq = p50(result.rows, "seq");
  EXPECT_GT(bound, 0.0);
  EXPECT_LE(bound, seq * 1.05);
}

TEST_F(Phase4Gpu, EveryKnobAtOnceChecksOut) {
  auto config = small();
  config.graph = true;
  config.comm_dtype = phase4::WireType::kBf16;
  config.accum_steps = 2;
  config.comm_priority = phase4::StreamPriority::kHigh;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");
}

// Every --sync strategy with --check: exact comm pattern, ranks in step, seq equal to the nccl strategy's within
// kStrategyTolerance, overlap equal to its own seq, and a bound_ref no larger than its bound.
TEST_F(Phase4Gpu, EverySyncStrategyChecksOut) {
  for (const auto& row : phase4::sync_rows()) {
    auto config = small();
    config.sync = row.name;
    config.layers = 3;  // 3 x 192^2 = 110,592 elements: not a multiple of the ce strategy's slice unit
    const auto result = run_on_own_trainer(config);
    EXPECT_EQ(result.failure, "") << row.name;
    EXPECT_EQ(row_of(result, "comm").get("wrong"), "0") << row.name;
    EXPECT_EQ(row_of(result, "overlap").get("overlap_vs_seq_bitwise"), "1") << row.name;
    EXPECT_EQ(row_of(result, "overlap").get("sync"), row.name);
    if (row.name != "nccl") {
      EXPECT_LE(row_of(result, "overlap").number("sync_vs_nccl_rel_error"), phase4::kStrategyTolerance) << row.name;
    }
    EXPECT_LE(p50(result.rows, "bound_ref"), p50(result.rows, "bound") * (1 + 1e-12)) << row.name;
  }
}

// The sharded strategies on layers the ranks do not divide (191^2 = 36,481 elements: every rank's slice plus a tail
// of 1 on two ranks, of 65 for the copy engines' 64-element slices), a prefetch depth of one layer and buckets of
// several layers, eagerly and replayed (--graph: each replay applies the last one's deferred update): checked as every
// strategy (above), the all-gathers of the overlapped step inside its forward, the reductions inside its backward.
TEST_F(Phase4Gpu, ShardedStrategiesTakeUnevenSlicesAndGatherInsideTheForward) {
  for (const auto& [name, graph] : std::vector<std::pair<std::string, bool>>{
           {"sharded", false}, {"sharded-ce", false}, {"sharded", true}, {"sharded-ce", true}}) {
    SCOPED_TRACE(name + (graph ? " --graph" : ""));
    auto config = small();
    config.sync = name;
    config.graph = graph;
    config.hidden = 191;
    config.layers = 4;
    config.knobs["prefetch"] = 1;
    config.bucket_mb = config.first_bucket_mb = 0.3;  // 78,643 elements: rounded up to three whole layers, then one
    std::unique_ptr<phase4::NcclComm> own;
    if (!(config.nccl_settings() == nccl_->settings())) {
      own = std::make_unique<phase4::NcclComm>(rank_, ranks_, MPI_COMM_WORLD, config.nccl_settings());
    }
    phase4::Trainer trainer(config.step_spec(), rank_, ranks_, own ? own->get() : nccl_->get(), MPI_COMM_WORLD);
    ASSERT_EQ(config.schedule().name, "sharded");
    EXPECT_EQ(trainer.adapt(config.plan()).buckets.size(), 2u) << name;
    const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
    EXPECT_EQ(result.failure, "") << name;
    EXPECT_EQ(row_of(result, "comm").get("wrong"), "0") << name;
    EXPECT_EQ(row_of(result, "overlap").get("overlap_vs_seq_bitwise"), "1") << name;
    EXPECT_LE(row_of(result, "overlap").number("sync_vs_nccl_rel_error"), phase4::kStrategyTolerance) << name;
    if (graph) EXPECT_EQ(row_of(result, "overlap").get("graph_vs_eager_bitwise"), "1");
    if (rank_ != 0) continue;
    // Per iteration and rank: the forward's span, each all-gather's, each reduction's.
    const auto [forward, backward] = phase4_test::overlap_spans(result);
    int gathers = 0, reductions = 0;
    for (const auto& e : result.events) {
      const auto key = std::make_pair(e.rank, e.iter);
      if (e.lane != "overlap:comm") continue;
      if (e.name == "allgather") {
        ++gathers;
        EXPECT_LE(e.end_us, forward.at(key).second + 1) << name << ": all-gather of layer " << e.chunk;
      } else {
        ++reductions;
        EXPECT_GE(e.start_us, backward.at(key).first - 1) << name << ": bucket " << e.chunk;
        EXPECT_EQ(e.name, name == "sharded" ? "reduce_scatter" : "alltoall");
      }
    }
    EXPECT_EQ(gathers, config.common.iters * config.layers * ranks_) << name;
    EXPECT_EQ(reductions, config.common.iters * 2 * ranks_) << name;
  }
}

// The derived rows keep their definitions (METRICS.md) for every strategy on three shapes whose steps are the GPU's
// work (about 1 ms; smaller ones time the host's launches): the overlapped step is no faster than its compute-only
// step (the same step with the collectives, and only they, left out), and a bound row (not a model), made of the
// compute-only run's parts, no slower than the overlapped step (on one rank the 0.2 MB buckets' comm-only run goes at
// the pace of its launches, which makes the rows a model: c05e1c7's run had them 2-10 % above the step, 20fa1af's on
// one H200 8.6 % at 3072,3,1024, 2.9 us per collective, label_bounds); each beyond the two
// runs' 95 % intervals, and beyond 2 % (two runs of the same work in one process drift by about that on one H100).
// The checks run first, as in every published run, and each mode warms up for 20 steps: run first on a GPU fresh
// from idle (a new trainer's set-up), the compute-only step of 2048,4,2048 came out 12 % slower than the overlapped
// one (results/1xH100/round3/gpu-tests/ctest-gpu-6d6f7b3.log).
TEST_F(Phase4Gpu, OverlapNeverBeatsItsComputeOnlyStepAndNoBoundExceedsIt) {
  const int shapes[][3] = {{2048, 4, 2048}, {1024, 6, 4096}, {3072, 3, 1024}};  // hidden, layers, batch
  for (const auto& row : phase4::sync_rows()) {
    for (const auto& shape : shapes) {
      auto config = small();
      config.sync = row.name;
      config.hidden = shape[0], config.layers = shape[1], config.batch = shape[2];
      config.common.iters = 20;
      config.common.warmup = 20;
      const std::string what = row.name + " at " + std::to_string(shape[0]) + "," + std::to_string(shape[1]) + "," +
          std::to_string(shape[2]);
      const auto result = run_on_own_trainer(config);
      const auto spread = [](const ob::SummaryRow& r) { return std::isnan(r.time_ci_rel) ? 0.0 : r.time_ci_rel; };
      const auto& compute = row_of(result, "compute");
      const auto& overlap = row_of(result, "overlap");
      // On one rank the collectives move nothing: compute and overlap run the same GPU work, and their medians differ
      // only by run-to-run variation (seen: ce at 1024,6,4096 on one H200, overlap 3.7 % below compute, 1.8 ms
      // steps). Two ranks keep the 2 % margin.
      const double slack = std::max(ranks_ == 1 ? 0.05 : 0.02, spread(compute) + spread(overlap));
      EXPECT_GE(overlap.time_ms.p50 * (1 + slack), compute.time_ms.p50) << what;
      for (const std::string mode : {"bound", "bound_ref"}) {
        const auto& bound = row_of(result, mode);
        if (bound.get("bound_kind") != "bound") continue;
        const auto& comm = row_of(result, "comm");  // what made it a lower bound: the comm-only run's pace
        EXPECT_LE(bound.time_ms.p50, overlap.time_ms.p50 * (1 + slack))
            << what << ": " << mode << " (compute " << compute.time_ms.p50 << " ms, comm " << comm.time_ms.p50
            << " ms with " << comm.number("enqueue_span_ms_p50") << " ms of enqueuing, " << comm.get("buckets")
            << " buckets)";
      }
    }
  }
}

TEST_F(Phase4Gpu, GemmSmMarginChecksOutAndRefusesAMarginOfEverySm) {
  auto config = small();
  config.gemm_sm_margin = 16;
  phase4::Trainer trainer(config.step_spec(), rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  EXPECT_EQ(phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr).failure, "");
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rank_ % ob::probe_cuda().devices));
  config.gemm_sm_margin = sms;
  EXPECT_THROW(phase4::require_sm_margin({config}), ob::UsageError);
}
