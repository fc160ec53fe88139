#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/nccl_path.hpp"
#include "phase4_chunked_nccl/driver/transport.hpp"
#include "tests/phase4/phase4_options_support.hpp"

using phase4::testing::exit_code_of;

TEST(Phase4Options, DefaultsTf32AndSweeps) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_TRUE(config.tf32);
  EXPECT_EQ(config.plan().buckets.size(), 1u + 41u);  // 1 MiB, then ceil(1023 / 25) buckets of 25 MiB over 1 GiB
  ASSERT_EQ(exit_code_of({"--no-tf32", "--sweep", "chunks=5,10,20,50"}, &config), -1);
  EXPECT_FALSE(config.tf32);
  const auto points = config.sweep_points();
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[2].chunks, 20);
  EXPECT_EQ(points[2].point_label(), "chunks=20");
  EXPECT_EQ(points[2].plan().buckets.size(), 20u);
  ASSERT_EQ(exit_code_of({"--sweep", "bucket-mb=1,5,25,100"}, &config), -1);
  EXPECT_EQ(config.sweep_points()[3].bucket_mb, 100.0);
  EXPECT_EQ(config.sweep_points()[3].plan().buckets.size(), 1u + 11u);
  ASSERT_EQ(exit_code_of({"--sweep", "nccl-max-ctas=2,4,8", "--comm-priority", "high"}, &config), -1);
  EXPECT_EQ(config.sweep_points()[1].nccl_max_ctas, 4);
  EXPECT_EQ(config.sweep_points()[1].point_label(), "bucket-mb=25, nccl-max-ctas=4");
  EXPECT_EQ(config.comm_priority, phase4::StreamPriority::kHigh);
}

TEST(Phase4Options, KnobsAndTheirSweeps) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--comm-dtype", "bf16", "--accum-steps", "4", "--graph", "--power"}, &config), -1);
  EXPECT_EQ(config.comm_dtype, phase4::WireType::kBf16);
  EXPECT_EQ(config.point_label(), "bucket-mb=25, accum-steps=4, comm-dtype=bf16, graph");
  const phase4::Config big = config.accumulation_reference();
  EXPECT_EQ(big.batch, 4 * config.batch);
  EXPECT_EQ(big.accum_steps, 1);
  ASSERT_EQ(exit_code_of({"--sweep", "accum-steps=1,2,8"}, &config), -1);
  EXPECT_EQ(config.sweep_points()[2].accum_steps, 8);
  ASSERT_EQ(exit_code_of({"--nccl-max-ctas", "16", "--sweep", "nccl-min-ctas=1,8,16"}, &config), -1);
  EXPECT_EQ(config.sweep_points()[1].point_label(), "bucket-mb=25, nccl-max-ctas=16, nccl-min-ctas=8");
  EXPECT_EQ(exit_code_of({"--nccl-max-ctas", "4", "--sweep", "nccl-min-ctas=1,8"}), ob::kExitUsage);
  // The CTA policy travels with every sweep point, and a point's NCCL settings say when it needs a new communicator.
  ASSERT_EQ(exit_code_of({"--nccl-cta-policy", "efficiency", "--sweep", "nccl-max-ctas=4,8"}, &config), -1);
  const auto points = config.sweep_points();
  EXPECT_EQ(points[1].point_label(), "bucket-mb=25, nccl-max-ctas=8, nccl-cta-policy=efficiency");
  EXPECT_EQ(points[1].nccl_settings().cta_policy, phase4::CtaPolicy::kEfficiency);
  EXPECT_FALSE(points[0].nccl_settings() == points[1].nccl_settings());
  EXPECT_TRUE(points[1].nccl_settings() == points[1].nccl_settings());
}

TEST(Phase4Options, DeviceBytesGrowWithEachKnob) {
  phase4::Config config;
  const double base = config.device_bytes(), w = 4.0 * config.layers * config.hidden * config.hidden;
  config.comm_dtype = phase4::WireType::kBf16;
  EXPECT_DOUBLE_EQ(config.device_bytes() - base, 0.5 * w);  // the bf16 copy of the gradient
  config.comm_dtype = phase4::WireType::kFp32;
  config.accum_steps = 3;  // two more micro-batches of inputs and targets
  EXPECT_DOUBLE_EQ(config.device_bytes() - base, 4.0 * 2 * 2.0 * config.batch * config.hidden);
}

TEST(Phase4Options, SyncStrategiesAndTheirNeeds) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.sync, "nccl");
  EXPECT_TRUE(phase4::find_sync("nccl") && phase4::find_sync("nccl-sym") && phase4::find_sync("ce"));
  ASSERT_EQ(exit_code_of({"--sync", "ce"}, &config), -1);
  EXPECT_EQ(config.nccl_settings().cta_policy,
            phase4::CtaPolicy::kZero);  // copy-engine collectives need CTA policy zero
  EXPECT_EQ(config.point_label(), "bucket-mb=25, sync=ce");
  EXPECT_EQ(exit_code_of({"--sync", "ce", "--comm-dtype", "bf16"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sync", "ce", "--nccl-cta-policy", "efficiency"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sync", "ring"}), ob::kExitUsage);
  ASSERT_EQ(exit_code_of({"--sync", "nccl-sym", "--comm-dtype", "bf16"}, &config), -1);
  EXPECT_EQ(config.nccl_settings().cta_policy, phase4::CtaPolicy::kDefault);
  // A sync sweep: every strategy on the same configuration, each point its own communicator settings.
  ASSERT_EQ(exit_code_of({"--sweep", "sync=nccl,nccl-sym,ce"}, &config), -1);
  const auto points = config.sweep_points();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2].sync, "ce");
  EXPECT_TRUE(points[0].nccl_settings() == points[1].nccl_settings());
  EXPECT_FALSE(points[1].nccl_settings() == points[2].nccl_settings());
  EXPECT_EQ(exit_code_of({"--sweep", "sync=nccl,ring"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--comm-dtype", "bf16", "--sweep", "sync=nccl,ce"}), ob::kExitUsage);
  // The SM margin and its sweep (whether it leaves SMs is checked on the GPU, which knows its count).
  ASSERT_EQ(exit_code_of({"--sweep", "gemm-sm-margin=0,8,16"}, &config), -1);
  EXPECT_EQ(config.sweep_points()[2].gemm_sm_margin, 16);
  EXPECT_EQ(config.sweep_points()[2].point_label(), "bucket-mb=25, gemm-sm-margin=16");
  EXPECT_EQ(exit_code_of({"--gemm-sm-margin", "-1"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sweep", "gemm-sm-margin=1.5"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sweep", "chunks=0x10"}), ob::kExitUsage);
}

// The sharded strategies: what they cannot honour is refused before any work, the prefetch depth is an option
// and a sweep, and their communication reference is sharded.
TEST(Phase4Options, ShardedStrategiesRefuseWhatTheyCannotHonour) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sync", "sharded-ce", "--prefetch", "2"}, &config), -1);
  EXPECT_TRUE(config.schedule().whole_tensors);
  EXPECT_EQ(config.nccl_settings().cta_policy, phase4::CtaPolicy::kZero);
  EXPECT_EQ(config.comm_reference(), "sharded");
  EXPECT_EQ(config.point_label(), "bucket-mb=25, sync=sharded-ce, prefetch=2");
  config.sync = "ce";
  EXPECT_FALSE(config.schedule().whole_tensors);
  EXPECT_EQ(config.comm_reference(), "nccl");
  EXPECT_EQ(exit_code_of({"--sync", "sharded", "--accum-steps", "2"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sync", "sharded", "--graph"}), -1);  // each replay applies the last one's update
  EXPECT_EQ(exit_code_of({"--sync", "sharded", "--comm-dtype", "bf16"}), ob::kExitUsage);
  // --plan auto chooses among every strategy, and refuses one it may choose that cannot run the point.
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--plan-syncs", "nccl,sharded,sharded-ce"}), -1);
  EXPECT_EQ(exit_code_of({"--calibrate", "--plan-syncs", "sharded-ce"}), -1);
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--plan-syncs", "nccl,sharded", "--accum-steps", "2"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--plan-syncs", "nccl,sharded", "--graph"}), -1);
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--plan-syncs", "nccl,fancy"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sweep", "sync=nccl,sharded", "--accum-steps", "3"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--prefetch", "-1"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--prefetch", "two"}), ob::kExitUsage);
  ASSERT_EQ(exit_code_of({"--sync", "sharded", "--sweep", "prefetch=0,1,4"}, &config), -1);
  // A schedule's own option, set where no strategy of the run would read it, is refused; with one that does, kept.
  EXPECT_EQ(exit_code_of({"--prefetch", "2"}), ob::kExitUsage);  // nccl: the all-reduce schedule
  EXPECT_EQ(exit_code_of({"--sync", "sharded", "--carry", "2"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--sweep", "carry=0,2"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--prefetch", "0"}), -1);  // its default: nothing ignored
  EXPECT_EQ(exit_code_of({"--sweep", "sync=nccl,nccl-carry", "--carry", "2"}), -1);
  EXPECT_EQ(exit_code_of({"--plan", "auto", "--plan-syncs", "nccl,sharded", "--prefetch", "1"}), -1);
  EXPECT_EQ(config.sweep_points()[1].knobs.at("prefetch"), 1);
  EXPECT_EQ(config.sweep_points()[2].point_label(), "bucket-mb=25, sync=sharded, prefetch=4");
}

TEST(Phase4Options, DeviceBytesCountTheStrategiesBuffers) {
  phase4::Config config;
  const double base = config.device_bytes(), w = 4.0 * config.layers * config.hidden * config.hidden;
  config.sync = "nccl-sym";
  EXPECT_DOUBLE_EQ(config.device_bytes() - base, w);  // bound_ref's nccl gradient
  config.sync = "ce";
  EXPECT_DOUBLE_EQ(config.device_bytes() - base, 3 * w);  // and the received slices and the reduced gradient
  config.common.check = true;  // and the nccl trainer the strategy's weights are checked against
  EXPECT_GT(config.device_bytes() - base, 3 * w + config.strategy_reference().device_bytes() - 1);
  config.common.check = false;
  config.sync = "sharded-ce";
  // the received slices, the gathered gradient; bound_ref's sharded strategy: its gradient and its slices
  EXPECT_DOUBLE_EQ(config.device_bytes() - base, 4.5 * w);
}

TEST(Phase4Options, SlowerTransportsRefuseTheStrategiesThatNeedPeerAccessAndSayTheirVariables) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--transport", "socket", "--sync", "sharded"}, &config), -1);
  EXPECT_EQ(config.transport, phase4::Transport::kSocket);
  EXPECT_EQ(exit_code_of({"--transport", "shm"}), -1);
  for (const std::string sync : {"nccl-sym", "ce", "sharded-ce"}) {
    EXPECT_EQ(exit_code_of({"--transport", "shm", "--sync", sync}), ob::kExitUsage) << sync;
    EXPECT_EQ(exit_code_of({"--transport", "nvlink", "--sync", sync}), -1) << sync;
  }
  EXPECT_EQ(exit_code_of({"--transport", "socket", "--sweep", "sync=nccl,ce"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--transport", "socket", "--plan", "auto", "--plan-syncs", "nccl,ce"}), ob::kExitUsage);
  EXPECT_EQ(exit_code_of({"--transport", "pcie"}), ob::kExitUsage);
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(phase4::transport_environment(phase4::Transport::kNvlink), Env{});
  EXPECT_EQ(phase4::transport_environment(phase4::Transport::kShm), (Env{{"NCCL_P2P_DISABLE", "1"}}));
  EXPECT_EQ(
      phase4::transport_environment(phase4::Transport::kSocket),
      (Env{
          {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "Socket"}, {"NCCL_SOCKET_IFNAME", "lo"}}));
}

TEST(Phase4Options, ASweepTakesEachValueOnceAndNoEmptyOne) {
  for (const std::string sweep : {"chunks=1,1", "chunks=1,,2", "chunks=,1", "bucket-mb=25,25.0", "sync=nccl,nccl"}) {
    EXPECT_EQ(exit_code_of({"--sweep", sweep}), 2) << sweep;
  }
  EXPECT_EQ(exit_code_of({"--sweep", "chunks=1,2"}), -1);
}

// --nccl-path reads NCCL's own INFO log: lines as NCCL 2.28 wrote them on the 2 x H200 machine
// (results/2xH200/strategies/phase4-sync-nccl-log-ce.log) and channel lines in the form NCCL prints them.
TEST(Phase4NcclPath, TheLogSaysWhichTransportsChannelsAndCopyEnginesRan) {
  const std::string log =
      "vm:5721:5721 [0] NCCL INFO NCCL version 2.28.3+cuda13.0\n"
      "vm:5721:5721 [0] NCCL INFO Using network Socket\n"
      "vm:5721:5721 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p "
      "channels per peer\n"
      "vm:5721:5800 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "vm:5721:5800 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "vm:5721:5800 [0] NCCL INFO Channel 02/0 : 1[1] -> 0[0] [receive] via NET/Socket/0\n"
      "vm:5721:5800 [0] NCCL INFO Channel 03 : 0[0] -> 1[1] via SHM/direct/direct\n"  // NCCL_P2P_DISABLE=1's lines
      "vm:5721:5721 [0] NCCL INFO Init CE, rank 0 baseUCSymReadyPtr 0x7fed3f000000, seq num 0\n"
      "vm:5721:5721 [0] NCCL INFO register comm 0x55eb41c85040 buffer 0x7fdf87000000 size 16777216\n"
      "vm:5721:5721 [0] NCCL WARN Channel 03/0 : via SHM/direct/direct (a warning, not a channel)\n"
      "unrelated output via P2P/direct\n";
  const phase4::NcclPath path = phase4::parse_nccl_log(log);
  EXPECT_EQ(path.version, "2.28.3+cuda13.0");
  EXPECT_EQ(path.network, "Socket");
  EXPECT_EQ(path.transports, (std::vector<std::string>{"NET/Socket/0", "P2P/CUMEM/read", "SHM/direct/direct"}));
  EXPECT_EQ(path.coll_channels, 24);
  EXPECT_EQ(path.p2p_channels, 32);
  EXPECT_TRUE(path.copy_engine);
  EXPECT_EQ(path.registrations, 1);
  const auto none = phase4::parse_nccl_log("");
  EXPECT_EQ(none.coll_channels, -1);
  EXPECT_FALSE(none.copy_engine);
  EXPECT_TRUE(none.transports.empty());
  EXPECT_EQ(phase4::nccl_log_environment("/tmp/x.log").back(),
            (std::pair<std::string, std::string>{"NCCL_DEBUG_FILE", "/tmp/x.log"}));
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--nccl-path"}, &config), -1);
  EXPECT_TRUE(config.nccl_path);
}

// --model: the transformer's width, tensors (its backward steps) and tokens replace --hidden, --layers and --batch;
// the gradient, the buckets and the memory follow its tensors.
TEST(Phase4Options, AModelSetsTheShapeAndItsGradientLayout) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--model", "llama3-8b", "--blocks", "2", "--seq", "4096"}, &config), -1);
  EXPECT_EQ(config.hidden, 4096);
  EXPECT_EQ(config.batch, 4096);
  const auto tensors = phase4::parameter_tensors(config.shape, 2);
  EXPECT_EQ(config.layers, static_cast<int>(tensors.size()));
  EXPECT_EQ(config.layout().elements(), static_cast<std::uint64_t>(phase4::parameter_count(config.shape, 2)));
  EXPECT_EQ(config.layout().steps(), config.layers);
  EXPECT_DOUBLE_EQ(config.grad_mb(), 4.0 * phase4::parameter_count(config.shape, 2) / (1 << 20));
  // DDP's buckets over its tensors (bucket_cap_mb 25, the first 1 MiB): no tensor is cut, the LM head (2 GB) is a
  // bucket of its own, and every bucket's ready step holds its end.
  const auto plan = config.plan();
  phase4::validate_plan(plan, config.layout());
  const auto ddp = phase4::plan_like_ddp(config.layout(), 25, 1);
  ASSERT_EQ(plan.buckets.size(), ddp.buckets.size());
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) EXPECT_EQ(plan.buckets[b].end, ddp.buckets[b].end);
  EXPECT_EQ(plan.buckets.front().ready_after, 0);
  EXPECT_EQ(plan.buckets.back().ready_after, config.layers - 1);
  // Memory: the weights, the strategy's gradient buffers, step_memory's activations and work.
  const auto m = phase4::step_memory(config.shape, 2, 4096, 1, 0);
  EXPECT_GT(config.device_bytes(), (2.0 + 1) * 4 * phase4::parameter_count(config.shape, 2) + m.activations + m.work);
  ASSERT_EQ(exit_code_of({"--model", "gpt2", "--micro-batch", "4", "--seq", "512", "--accum-steps", "2"}, &config), -1);
  EXPECT_EQ(config.batch, 2048);
  const auto big = config.accumulation_reference();
  EXPECT_EQ(big.micro_batch, 8);
  EXPECT_EQ(big.batch, 4096);
  ASSERT_EQ(exit_code_of({"--model", std::string(OVERLAP_TEST_DATA_DIR) + "/models/gpt2.config.json"}, &config), -1);
  EXPECT_EQ(config.hidden, 768);
  EXPECT_EQ(config.batch, 2048);
}

TEST(Phase4Options, AModelRefusesWhatItCannotRun) {
  const int usage = ob::kExitUsage;
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--hidden", "1024"}), usage);  // the model sets it
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--layers", "4"}), usage);
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--batch", "64"}), usage);
  EXPECT_EQ(exit_code_of({"--seq", "512"}), usage);  // needs --model
  EXPECT_EQ(exit_code_of({"--blocks", "2"}), usage);
  EXPECT_EQ(exit_code_of({"--micro-batch", "2"}), usage);
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--blocks", "13"}), usage);  // gpt2 has 12
  EXPECT_EQ(exit_code_of({"--model", "no-such-model"}), usage);
  EXPECT_EQ(exit_code_of({"--model", "llama3-8b", "--seq", "65536"}), usage);  // 65536 x 128256 logits: over 2^31
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--mode", "interference"}), usage);
  for (const auto& row : phase4::sync_rows()) {  // every strategy, the sharded ones slicing each tensor
    EXPECT_EQ(exit_code_of({"--model", "gpt2", "--sync", row.name}), -1) << row.name;
  }
  EXPECT_EQ(exit_code_of({"--model", "gpt2", "--sweep", "sync=nccl,sharded"}), -1);
}

TEST(Phase4Options, PassesShareTheIterationsAndNeedOneEach) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--iters", "12", "--passes", "3"}, &config), -1);
  EXPECT_EQ(config.passes, 3);
  EXPECT_EQ(exit_code_of({"--iters", "12", "--passes", "12"}), -1);  // one timed step a pass
  EXPECT_EQ(exit_code_of({"--iters", "4", "--passes", "5"}), ob::kExitUsage);  // a pass without a timed step
  EXPECT_EQ(exit_code_of({"--passes", "0"}), ob::kExitUsage);
}
