// A schedule, a model family and a strategy are each one file that registers itself (DESIGN.md, "Phase 4 in
// rooms"): this file, in the test build only, adds one of each with no edit anywhere else: the MLP under another
// family name, a schedule with a timed part of its own (each forward layer's weights copied on the comm stream, the
// layer waiting for its copy: its row declares the part, its bound and the planner's model of its forward), and nccl
// under another strategy driven by it. A checked point runs through all three on 1 and 2 ranks, and a --plan auto
// point through the driver's calibration and the planner unchanged. Skips (exit 77) without a CUDA device.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/handles.hpp"
#include "common/metrics.hpp"
#include "phase4_chunked_nccl/driver/sweep.hpp"
#include "phase4_chunked_nccl/core/families.hpp"
#include "phase4_chunked_nccl/model/mlp.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"
#include "tests/phase4/phase4_gpu_fixture.hpp"

namespace {

int models_made = 0, steps_run = 0;

class TestModel final : public phase4::Mlp {
 public:
  TestModel(const phase4::ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights)
      : Mlp(spec, rank, cublas, grads, weights) {
    ++models_made;
  }
};
// The family's row: the MLP's options, layout, memory and words (its row asked when called: registered by then), a
// column of its own, and its model: the MLP, counted.
phase4::FamilyRow test_family() {
  phase4::FamilyRow row;
  row.name = "test-only";
  row.help = "the MLP, counted";
  row.options = {"--hidden", "--layers", "--batch"};
  row.fit_option = "--batch";
  row.layout = [](const phase4::ModelSpec& s) { return phase4::GradientLayout::equal(s.layers, s.hidden); };
  row.activation_floats = [](const phase4::ModelSpec& s) { return phase4::family_row("mlp").activation_floats(s); };
  row.describe = [](const phase4::ModelSpec& s) { return "counted " + phase4::family_row("mlp").describe(s); };
  row.columns = [](const phase4::ModelSpec&) {
    return std::vector<std::pair<std::string, ob::FieldValue>>{{"model", std::string("counted")}};
  };
  row.square_layers = true;
  row.make = phase4::made_model<TestModel>;
  return row;
}
const phase4::RegisterFamily kTestFamily(test_family());

// Forward layer `layer`'s gradient range (forward layer l is backward step L - l).
std::pair<std::uint64_t, std::uint64_t> layer_range(const phase4::ModelSpec& spec, int layer) {
  const auto layout = spec.layout();
  const int step = spec.layers - layer;
  return {layout.begin(step), layout.ends[step]};
}

// The part's forward: the copies back to back on the comm stream from the step's start, each layer after its own.
void copied_forward(const std::vector<double>& layers, const std::vector<double>& copies, double rest,
                    double& compute_end, double& comm_end) {
  compute_end = comm_end = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    comm_end += copies.at(l);
    compute_end = std::max(compute_end, comm_end) + layers[l];
  }
  compute_end += rest;
}

class CopySchedule final : public phase4::Schedule {
 public:
  CopySchedule(const phase4::StepResources& resources, phase4::GradientSync& sync)
      : Schedule(resources, sync), copy_(resources.model.elements()) {
    for (int l = 0; l < resources.spec.model.layers; ++l) copied_.push_back(ob::make_sync_event());
  }
  void step(ob::Mode mode, const phase4::BucketPlan& plan, phase4::StepMarks& m) override {
    ++steps_run;
    const int layers = r_.spec.model.layers;
    if (mode == ob::Mode::kComm) {
      return communicate_only(plan, m, [&] {
        for (int layer = 1; layer <= layers; ++layer) copy(layer, m);
      });
    }
    train(
        mode, plan, m,
        [&]() -> phase4::Model::LayerHook {
          hand_over(r_.compute, r_.handoff, r_.comm);  // the previous update is done
          for (int layer = 1; layer <= layers; ++layer) copy(layer, m);
          return [this](int layer) { CUDA_CHECK(cudaStreamWaitEvent(r_.compute, copied_[layer - 1], 0)); };
        },
        [this] { update(); });
  }

 private:
  void copy(int layer, phase4::StepMarks& m) {
    auto& part = m.parts.at("copy");
    const auto [begin, end] = layer_range(r_.spec.model, layer);
    part.begin[layer - 1] = m.mark(r_.comm);
    CUDA_CHECK(cudaMemcpyAsync(copy_.get() + begin, r_.model.weights() + begin, (end - begin) * sizeof(float),
                               cudaMemcpyDeviceToDevice, r_.comm));
    part.end[layer - 1] = m.mark(r_.comm);
    CUDA_CHECK(cudaEventRecord(copied_[layer - 1], r_.comm));
  }
  ob::DeviceBuffer<float> copy_;
  std::vector<ob::CudaEvent> copied_;
};

phase4::ScheduleRow copy_schedule_row() {
  phase4::ScheduleRow row;
  row.name = "test-only";
  row.help = "each forward layer's weights copied on the comm stream ahead of it";
  row.parts = {{"copy", /*comm=*/true, /*rank_share=*/false, "copy"}};
  row.bound = [](const phase4::MeasuredParts& p, const phase4::SyncSpec&) {
    double compute_end = 0, comm_end = 0;
    copied_forward(p.layer_ms, p.part_ms.at("copy"), std::max(0.0, p.forward_ms - ob::sum_ms(p.layer_ms)), compute_end,
                   comm_end);
    ob::run_pipeline(p.backward_ms, p.bucket_ms, p.ready_after, compute_end, comm_end);
    return ob::step_bound(std::max(compute_end, comm_end) + p.update_ms, p.t_comp, p.t_comm);
  };
  row.forward = [](const phase4::ScheduleCalibration& c, const phase4::SyncSpec&, double& compute_end,
                   double& comm_end) {
    copied_forward(c.layer_ms, c.part_ms.at("copy"), c.forward_rest_ms, compute_end, comm_end);
  };
  row.make = phase4::made_schedule<CopySchedule>;
  return row;
}
const phase4::RegisterSchedule kTestSchedule(copy_schedule_row());

phase4::SyncRow test_row() {
  phase4::SyncRow row;
  row.name = "test-only";
  row.help = "nccl's all-reduce under the test-only schedule";
  row.schedule = "test-only";
  row.reference = "nccl";
  row.make = [](const phase4::SyncContext& context) { return phase4::make_sync("nccl", context); };
  return row;
}
const phase4::RegisterSync kTestSync(test_row());

using phase4_test::Phase4Gpu;

}  // namespace

TEST_F(Phase4Gpu, AScheduleAModelAndAStrategyInOneFileEachRunChecked) {
  auto config = small();
  config.sync = "test-only";
  config.family = "test-only";
  const phase4::StepSpec spec = config.step_spec();
  phase4::Trainer trainer(spec, rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");  // exact all-reduce, overlap equal to seq, the weights equal to nccl's
  EXPECT_GE(models_made, 1);
  EXPECT_GT(steps_run, config.common.iters);
  const auto bound = phase4_test::row_of(result, "bound");
  EXPECT_EQ(bound.get("sync"), "test-only");
  EXPECT_EQ(bound.get("model_family"), "test-only");  // the family's row: its own column
  EXPECT_EQ(bound.get("model"), "counted");
  int copies = 0;  // the schedule's own part, drawn where its row says
  for (const auto& e : result.events) copies += e.lane == "overlap:comm" && e.name == "copy";
  EXPECT_EQ(copies, config.common.iters * config.layers * ranks_);
}

TEST_F(Phase4Gpu, AScheduleWithAPartOfItsOwnIsCalibratedAndPlanned) {
  auto config = small();
  config.sync = "test-only";
  config.family = "test-only";
  config.plan_mode = phase4::PlanMode::kAuto;
  config.plan_syncs = "test-only";
  std::atomic<ncclComm_t> live{nccl_->get()};
  const auto result = phase4::run_sweep({config}, rank_, ranks_, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr, live,
                                        nullptr, {}, true);
  EXPECT_EQ(result.failure, "");
  ASSERT_TRUE(result.measured.has_value());
  const auto* own = result.measured->strategy("test-only");
  ASSERT_NE(own, nullptr);
  ASSERT_EQ(own->schedule.part_ms.at("copy").size(), static_cast<std::size_t>(config.layers));
  for (double ms : own->schedule.part_ms.at("copy")) EXPECT_GT(ms, 0);
  EXPECT_GT(own->schedule.stretch.at("copy"), 0);
  const auto back = phase4::Calibration::from_json(result.measured->to_json(), "c.json");  // under its row's keys
  EXPECT_EQ(back.strategy("test-only")->schedule.part_ms, own->schedule.part_ms);
  EXPECT_TRUE(result.measured->to_json()["strategies"][0]["test-only"].contains("copy_stretch"));
  const double predicted = phase4_test::row_of({result.rows, {}, ""}, "overlap").number("predicted_ms");
  EXPECT_GT(predicted, 0) << "the planner predicted the point's step from the schedule's row";
}

TEST(Rooms, AnUnknownFamilyOrScheduleIsRefusedByName) {
  phase4::ModelSpec spec;
  spec.family = "no-such";
  try {
    phase4::make_model(spec, 0, nullptr, nullptr, nullptr);
    FAIL() << "an unknown family was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such'"), std::string::npos) << e.what();
  }
  const auto schedules = phase4::schedule_names();
  EXPECT_EQ(schedules, (std::vector<std::string>{"all-reduce", "carry", "sharded", "test-only"}));
  const auto families = phase4::family_names();
  EXPECT_EQ(families, (std::vector<std::string>{"mlp", "test-only", "transformer"}));
}
