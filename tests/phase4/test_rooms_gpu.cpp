// A schedule, a model family and a strategy are each one file that registers itself (DESIGN.md, "Phase 4 in
// rooms"): this file, in the test build only, adds one of each (the MLP under another name, the all-reduce step
// under another schedule, nccl under another strategy) with no edit anywhere else, and a checked point runs through
// all three on 1 and 2 ranks. Skips (exit 77) without a CUDA device.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/metrics.hpp"
#include "phase4_chunked_nccl/model/model.hpp"
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
const phase4::RegisterModel kTestModel("test-only", phase4::made_model<TestModel>);

class TestSchedule final : public phase4::Schedule {
 public:
  using Schedule::Schedule;
  void step(ob::Mode mode, const phase4::BucketPlan& plan, phase4::StepMarks& m) override {
    ++steps_run;
    if (mode == ob::Mode::kComm) return communicate_only(plan, m, {});
    train(
        mode, plan, m, [] { return phase4::Model::LayerHook(); }, [this] { update(); });
  }
  double bound(const phase4::MeasuredParts& p) const override {
    return ob::schedule_bound_ms(p.forward_ms, p.backward_ms, p.bucket_ms, p.ready_after, p.update_ms, p.t_comp,
                                 p.t_comm);
  }
};
const phase4::RegisterSchedule kTestSchedule("test-only", phase4::made_schedule<TestSchedule>);

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
  phase4::StepSpec spec = config.step_spec();
  spec.model.family = "test-only";
  phase4::Trainer trainer(spec, rank_, ranks_, nccl_->get(), MPI_COMM_WORLD);
  const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
  EXPECT_EQ(result.failure, "");  // exact all-reduce, overlap equal to seq, the weights equal to nccl's
  EXPECT_EQ(models_made, 1);
  EXPECT_GT(steps_run, config.common.iters);
  EXPECT_EQ(phase4_test::row_of(result, "bound").get("sync"), "test-only");
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
  EXPECT_EQ(schedules, (std::vector<std::string>{"all-reduce", "sharded", "test-only"}));
  const auto families = phase4::model_families();
  EXPECT_EQ(families, (std::vector<std::string>{"mlp", "test-only", "transformer"}));
}
