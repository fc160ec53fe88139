// The carry schedule's strategies (schedule/carry.cpp) on buckets that span layers, with one, half and every forward
// layer carried, eagerly and replayed (--graph: the captured step holds the previous step's tail): checked as every
// strategy (test_phase4_gpu.cpp), overlap equal to its own seq bit for bit, and in the breakdown's timeline the
// carried buckets reduced inside the forward, the others inside the backward.
#include <algorithm>
#include <map>
#include <utility>

#include "tests/phase4/phase4_gpu_fixture.hpp"

using phase4_test::Phase4Gpu;
using phase4_test::row_of;

TEST_F(Phase4Gpu, CarriedBucketsRunBesideTheNextForwardAndTheWeightsStayExact) {
  for (const auto& name : phase4::sync_names("carry")) {
    for (const bool graph : {false, true}) {
      for (const int carry : {1, 0, 9}) {  // layer 1's buckets, half the layers', every layer's
        SCOPED_TRACE(name + (graph ? " --graph" : "") + " --carry " + std::to_string(carry));
        auto config = small();
        config.sync = name;
        config.graph = graph;
        config.knobs["carry"] = carry;
        config.layers = 4;
        std::unique_ptr<phase4::NcclComm> own;
        if (!(config.nccl_settings() == nccl_->settings())) {
          own = std::make_unique<phase4::NcclComm>(rank_, ranks_, MPI_COMM_WORLD, config.nccl_settings());
        }
        phase4::Trainer trainer(config.step_spec(), rank_, ranks_, own ? own->get() : nccl_->get(), MPI_COMM_WORLD);
        const auto plan = trainer.adapt(config.plan());
        const auto result = phase4::run_point(config, trainer, MPI_COMM_WORLD, ob::SteadyClock::now(), nullptr);
        EXPECT_EQ(result.failure, "");
        EXPECT_EQ(row_of(result, "comm").get("wrong"), "0");
        EXPECT_EQ(row_of(result, "overlap").get("overlap_vs_seq_bitwise"), "1");
        EXPECT_LE(row_of(result, "overlap").number("sync_vs_nccl_rel_error"), phase4::kStrategyTolerance);
        if (graph) EXPECT_EQ(row_of(result, "overlap").get("graph_vs_eager_bitwise"), "1");
        if (rank_ != 0) continue;
        const int carried_layers = carry > 0 ? std::min(carry, config.layers) : (config.layers + 1) / 2;
        const auto [forward, backward] = phase4_test::overlap_spans(result);  // per rank and iteration
        int carried = 0, reductions = 0;
        for (const auto& e : result.events) {
          if (e.lane != "overlap:comm") continue;
          ++reductions;
          const auto key = std::make_pair(e.rank, e.iter);
          if (plan.buckets.at(e.chunk).ready_after >= config.layers - carried_layers) {
            ++carried;
            EXPECT_LE(e.end_us, forward.at(key).second + 1) << "carried bucket " << e.chunk;
          } else {
            EXPECT_GE(e.start_us, backward.at(key).first - 1) << "bucket " << e.chunk;
          }
        }
        const int steps = static_cast<int>(forward.size());
        EXPECT_EQ(reductions, steps * static_cast<int>(plan.buckets.size()));
        EXPECT_GT(carried, 0);
        if (carry == 9) EXPECT_EQ(carried, reductions);
        if (carry == 1) EXPECT_LT(carried, reductions);
      }
    }
  }
}
