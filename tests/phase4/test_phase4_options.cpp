#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "common/run_output.hpp"
#include "phase4_chunked_nccl/config.hpp"
#include "tests/support/test_support.hpp"

namespace {
int exit_code_of(std::vector<std::string> args, phase4::Config* out = nullptr) {
  phase4::Config config;
  const int code = ob::testing::exit_code_of(
      "phase4_chunked_nccl", std::move(args), [&](CLI::App& app) { phase4::add_options(app, config); },
      [&](const CLI::App& app) {
        phase4::validate(app, config);
        ob::resolve_output_paths("phase4", config.common);
      });
  if (out && code == -1) *out = config;
  return code;
}
}  // namespace

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
  EXPECT_EQ(config.comm_priority, "high");
}

TEST(Phase4Options, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--hidden", "0"},           {"--layers", "-1"},           {"--batch", "x"},
      {"--bucket-mb", "0"},        {"--bucket-mb", "nan"},       {"--first-bucket-mb", "-1"},
      {"--chunks", "0"},           {"--chunks", "5", "--bucket-mb", "10"},  // contradictory
      {"--chunks", "5", "--first-bucket-mb", "2"},                        {"--mode", "fast"},
      {"--sweep", "chunks"},       {"--sweep", "chunks=0"},      {"--sweep", "chunks=2.5"},
      {"--sweep", "layers=1,2"},   {"--sweep", "bucket-mb=1,x"}, {"--sweep", "bucket-mb=5", "--chunks", "4"},
      {"--lr", "inf"},             {"--comm-priority", "urgent"}, {"--nccl-max-ctas", "0"},
      {"--nccl-max-ctas", "65"},   {"--nccl-min-ctas", "8", "--nccl-max-ctas", "4"},
      {"--nccl-min-ctas", "2"},    {"--nccl-min-ctas", "2", "--sweep", "nccl-max-ctas=1,4"}, {"--sweep", "nccl-max-ctas=2.5"},             {"--batch", "1M", "--hidden", "4096"},   {"--csv", "/nonexistent/x.csv"},
  };
  for (const auto& args : bad) {
    EXPECT_EQ(exit_code_of(args), ob::kExitUsage) << ob::testing::joined(args);
  }
}
