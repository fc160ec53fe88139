// A --sync strategy is one file: this one exists only in the test build (no edit anywhere else), and the options,
// the help, the memory estimate, the bound's reference and the planner's list all know it.
#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/core/registry.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"
#include "tests/support/test_support.hpp"

namespace {

phase4::SyncRow test_row() {
  phase4::SyncRow row;
  row.name = "test-only";
  row.help = "a strategy only the tests register";
  row.reference = "nccl";
  row.buffers = 4;
  row.bounded = false;
  return row;  // no factory: the CPU tests never run it
}

const phase4::RegisterSync kTestOnly(test_row());

int exit_code_of(std::vector<std::string> args, phase4::Config* out = nullptr) {
  phase4::Config config;
  const int code = ob::testing::exit_code_of(
      "phase4_chunked_nccl", std::move(args), [&](CLI::App& app) { phase4::add_options(app, config); },
      [&](const CLI::App& app) { phase4::validate(app, config); });
  if (out && code == -1) *out = config;
  return code;
}

}  // namespace

TEST(SyncRegistry, AStrategyInItsOwnFileIsKnownEverywhere) {
  EXPECT_EQ(phase4::sync_row("test-only").help, "a strategy only the tests register");
  const auto all = phase4::sync_names(phase4::kAllReduceSchedule);
  EXPECT_NE(std::find(all.begin(), all.end(), "test-only"), all.end());
  EXPECT_NE(phase4::sync_list(phase4::kAllReduceSchedule).find("test-only"), std::string::npos);
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--sync", "test-only"}, &config), -1);
  EXPECT_EQ(config.comm_reference(), "nccl");
  EXPECT_TRUE(config.schedule().parts.empty());
  phase4::Config nccl;
  const double w = 4.0 * config.layers * config.hidden * config.hidden;
  EXPECT_DOUBLE_EQ(config.device_bytes() - nccl.device_bytes(), 4 * w);  // its buffers and bound_ref's nccl
  ASSERT_EQ(exit_code_of({"--sweep", "sync=nccl,test-only", "--plan-syncs", "nccl,test-only", "--calibrate"}), -1);
  EXPECT_EQ(exit_code_of({"--sync", "test-only", "--comm-dtype", "bf16"}), ob::kExitUsage);  // fp32 only: its row
}

TEST(SyncRegistry, TheHelpListsEveryStrategyWithItsHelp) {
  CLI::App app;
  phase4::Config config;
  phase4::add_options(app, config);
  const std::string help = app.help();
  for (const auto& row : phase4::sync_rows()) {
    EXPECT_NE(help.find(row.name + ": "), std::string::npos) << row.name;
  }
  EXPECT_NE(help.find("a strategy only the tests register"), std::string::npos);
}

TEST(SyncRegistry, RowsSayWhatTheRestOfPhase4NeedsToKnow) {
  EXPECT_EQ(phase4::sync_row("ce").cta_policy, phase4::CtaPolicy::kZero);
  EXPECT_EQ(phase4::sync_row("sharded-ce").schedule, "sharded");
  EXPECT_TRUE(phase4::sync_row("sharded-ce").ring_only && !phase4::sync_row("ce").ring_only);
  EXPECT_EQ(phase4::sync_row("sharded-ce").reference, "sharded");
  EXPECT_TRUE(phase4::sync_row("sharded").graph);  // its deferred update made unconditional in a captured step
  EXPECT_FALSE(phase4::sync_row("sharded").accumulation);
  EXPECT_TRUE(phase4::sync_row("nccl-sym").bf16);
  EXPECT_EQ(phase4::find_sync("ring"), nullptr);
  EXPECT_THROW(phase4::sync_row("ring"), std::invalid_argument);
  const auto names = phase4::sync_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  // A sharded strategy's collectives rise with the ranks as an all-reduce on the same engines (phase4_predict --comm).
  EXPECT_EQ(phase4::sync_row("sharded").scales_as, "nccl");
  EXPECT_EQ(phase4::sync_row("sharded-ce").scales_as, "ce");
  for (const auto& row : phase4::sync_rows()) {
    if (row.scales_as.empty()) continue;
    const auto& twin = phase4::sync_row(row.scales_as);
    EXPECT_EQ(row.schedule, "sharded") << row.name;
    EXPECT_EQ(twin.schedule, phase4::kAllReduceSchedule) << row.name;
    EXPECT_EQ(twin.peer_access, row.peer_access) << row.name;
  }
}

namespace {
int one() { return 1; }
int two() { return 2; }
}  // namespace

TEST(Registry, FactoriesByNameSortedAndAnUnknownOrTwiceTakenNameRefused) {
  using Numbers = phase4::Registry<int (*)()>;  // the registry of model families and schedules, for any factory
  Numbers::add("numbers", "two", two);
  Numbers::add("numbers", "one", one);
  EXPECT_EQ(Numbers::names(), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(Numbers::get("number", "two")(), 2);
  try {
    Numbers::get("number", "three");
    FAIL() << "an unknown name was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "no number 'three' in this build");
  }
  EXPECT_DEATH(Numbers::add("numbers", "one", two), "two numbers are called 'one'");
}
