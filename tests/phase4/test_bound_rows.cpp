// Phase 4's bound rows (driver/bound_rows.cpp): a lower bound where the schedule's isolated parts make one, a model
// where they cannot (the copy-engine pipelines, a comm-only step at the host's pace), a bound above its
// step said, and an overlapped step faster than its compute-only one said.
#include <gtest/gtest.h>

#include <sstream>

#include "phase4_chunked_nccl/driver/bound_rows.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

TEST(Phase4Bounds, CopyEnginePipelinesHaveModelsNotBoundsAndABoundAboveTheStepIsSaid) {
  EXPECT_TRUE(phase4::sync_row("nccl").bounded);
  EXPECT_TRUE(phase4::sync_row("sharded").bounded);
  EXPECT_FALSE(phase4::sync_row("ce").bounded);
  EXPECT_FALSE(phase4::sync_row("sharded-ce").bounded);
  std::vector<ob::SummaryRow> rows(3);
  rows[0].mode = ob::Mode::kOverlap;
  rows[0].set_times({7.0, 7.01, 6.99, 7.0});
  rows[1] = ob::derived_row(ob::Mode::kBound, 8.0, rows[0]);
  rows[2] = ob::derived_row(ob::Mode::kBoundRef, 6.5, rows[0]);
  std::ostringstream said;
  phase4::label_bounds(rows, true, &said);
  EXPECT_EQ(rows[1].get("bound_kind"), "bound");
  EXPECT_EQ(rows[0].get("bound_kind"), "");
  EXPECT_NE(said.str().find("warning: bound 8 ms is above the overlapped step 7 ms"), std::string::npos) << said.str();
  EXPECT_EQ(said.str().find("bound_ref"), std::string::npos);  // 6.5 lies below the step
  std::ostringstream quiet;
  phase4::label_bounds(rows, false, &quiet);
  EXPECT_EQ(rows[1].get("bound_kind"), "model");
  EXPECT_EQ(rows[2].get("bound_kind"), "model");
  EXPECT_TRUE(quiet.str().empty());  // a model may lie above the step
}

TEST(Phase4Bounds, ACommOnlyStepAtTheHostsPaceMakesTheBoundAModel) {
  std::vector<ob::SummaryRow> rows(3);
  rows[0].mode = ob::Mode::kComm;
  rows[0].set_times({2.0, 2.01, 1.99, 2.0});
  rows[0].config("buckets", 330).set("enqueue_span_ms_p50", 1.9);  // 330 tiny buckets: the GPU waited for each launch
  rows[1].mode = ob::Mode::kOverlap;
  rows[1].set_times({2.8, 2.81, 2.79, 2.8});
  rows[2] = ob::derived_row(ob::Mode::kBound, 2.96, rows[1]);
  std::ostringstream said;
  phase4::label_bounds(rows, true, &said);
  EXPECT_EQ(rows[2].get("bound_kind"), "model");
  EXPECT_NE(said.str().find("note: the comm-only step's 330 collectives took 2 ms, the host enqueuing them for 1.9"),
            std::string::npos)
      << said.str();
  EXPECT_EQ(said.str().find("warning"), std::string::npos) << said.str();  // a model may lie above the step
  rows[0].set("enqueue_span_ms_p50", 0.9);  // under half: the GPU set the pace, the bound holds and is checked
  std::ostringstream checked;
  phase4::label_bounds(rows, true, &checked);
  EXPECT_EQ(rows[2].get("bound_kind"), "bound");
  EXPECT_NE(checked.str().find("warning: bound 2.96 ms is above the overlapped step 2.8 ms"), std::string::npos);
  // One H200 rank, 3072,3,1024 at 0.2 MB: 541 collectives of 2.9 us each, the host enqueuing for 46 % of them. Each
  // cost a launch, which the comm-only run paid back to back: the "bound" came out 8.6 % above the step.
  rows[0].set_times({1.543, 1.55, 1.54, 1.543});
  rows[0].config("buckets", 541).set("enqueue_span_ms_p50", 0.711);
  rows[1].set_times({4.126, 4.13, 4.12, 4.126});
  rows[2] = ob::derived_row(ob::Mode::kBound, 4.482, rows[1]);
  std::ostringstream latency;
  phase4::label_bounds(rows, true, &latency);
  EXPECT_EQ(rows[2].get("bound_kind"), "model");
  EXPECT_NE(latency.str().find("note: the comm-only step's 541 collectives took 1.543 ms"), std::string::npos)
      << latency.str();
  EXPECT_EQ(latency.str().find("warning"), std::string::npos) << latency.str();
  rows[0].config("buckets", 100);  // 15 us each: the link's pace, the bound holds and is checked
  std::ostringstream link;
  phase4::label_bounds(rows, true, &link);
  EXPECT_EQ(rows[2].get("bound_kind"), "bound");
}

TEST(Phase4Bounds, AnOverlappedStepAtTheHostsPaceKeepsItsBound) {
  // 4 x H100, 1024,32,256, sharded at 64 MB: the host enqueued the collectives for 1.129 of the overlapped step's
  // 2.773 ms. The bound no longer adds the compute-only step's time outside its tasks after the pipeline (metrics.hpp):
  // such a step hides it behind its communication. It stays a bound, and is checked.
  std::vector<ob::SummaryRow> rows(3);
  rows[0].mode = ob::Mode::kComm;
  rows[0].set_times({1.855, 1.86, 1.85, 1.855});
  rows[0].config("buckets", 3).set("enqueue_span_ms_p50", 0.068);
  rows[1].mode = ob::Mode::kOverlap;
  rows[1].set_times({2.773, 2.78, 2.77, 2.773});
  rows[1].time_ci_rel = 0.01;
  rows[1].set("enqueue_span_ms_p50", 1.129);
  rows[2] = ob::derived_row(ob::Mode::kBound, 2.566, rows[1]);  // T_comp: the step's pipeline ends before it
  std::ostringstream said;
  phase4::label_bounds(rows, true, &said);
  EXPECT_EQ(rows[2].get("bound_kind"), "bound");
  EXPECT_TRUE(said.str().empty()) << said.str();
  rows[2] = ob::derived_row(ob::Mode::kBound, 2.894, rows[1]);  // the old bound, overhead added after the pipeline
  std::ostringstream checked;
  phase4::label_bounds(rows, true, &checked);
  EXPECT_NE(checked.str().find("warning: bound 2.894 ms is above the overlapped step 2.773 ms"), std::string::npos)
      << checked.str();
}

TEST(Phase4Bounds, ABoundCarriesItsInputsSpreadAndIsAboveItsStepOnlyBeyondBoth) {
  // 2 x H200, 1024,32,256, the planned nccl plan: one round's compute-only run moved +-12.5 % (unstable) and its bound,
  // 1.975 ms, lay 12 % above the 1.766 ms step; in the other rounds the compute-only run was steady and the bound
  // 1.50 ms.
  std::vector<ob::SummaryRow> rows(4);
  rows[0].mode = ob::Mode::kCompute;
  rows[0].set_times({1.895, 1.9, 1.89, 1.895});
  rows[0].time_ci_rel = 0.125;
  rows[1].mode = ob::Mode::kComm;
  rows[1].set_times({0.698, 0.7, 0.69, 0.698});
  rows[1].time_ci_rel = 0.007;
  rows[2].mode = ob::Mode::kOverlap;
  rows[2].set_times({1.766, 1.77, 1.76, 1.766});
  rows[2].time_ci_rel = 0.0024;
  rows[3] = ob::derived_row(ob::Mode::kBound, 1.975, rows[2]);
  std::ostringstream quiet;
  phase4::label_bounds(rows, true, &quiet);
  EXPECT_EQ(rows[3].get("bound_kind"), "bound");
  EXPECT_DOUBLE_EQ(rows[3].time_ci_rel, 0.125);  // the larger of its inputs' spreads
  EXPECT_TRUE(rows[3].unstable());
  EXPECT_EQ(quiet.str().find("warning"), std::string::npos) << quiet.str();
  rows[0].time_ci_rel = 0.003;  // steady inputs: the same bound is above its step
  std::ostringstream said;
  phase4::label_bounds(rows, true, &said);
  EXPECT_DOUBLE_EQ(rows[3].time_ci_rel, 0.007);
  EXPECT_NE(said.str().find("warning: bound 1.975 ms is above the overlapped step 1.766 ms beyond both spreads"),
            std::string::npos)
      << said.str();
}

TEST(Phase4Bounds, AnOverlappedStepFasterThanItsComputeOnlyStepIsSaid) {
  std::vector<ob::SummaryRow> rows(2);
  rows[0].mode = ob::Mode::kCompute;
  rows[0].set_times({11.45, 11.46, 11.44, 11.45});
  rows[1].mode = ob::Mode::kOverlap;
  rows[1].set_times({11.18, 11.19, 11.17, 11.18});
  std::ostringstream said;
  phase4::label_bounds(rows, true, &said);
  EXPECT_NE(said.str().find("warning: the overlapped step 11.18 ms is faster than its compute-only step 11.45 ms"),
            std::string::npos)
      << said.str();
  rows[1].set_times({11.40, 11.6, 11.3, 11.9, 11.2, 11.45});  // within the two spreads: nothing said
  std::ostringstream quiet;
  phase4::label_bounds(rows, true, &quiet);
  EXPECT_TRUE(quiet.str().empty()) << quiet.str();
}
