// A model family is one file with its row (core/families.hpp): this file, in the CPU test build only, adds one with
// options, a layout, a memory and a calibration name of its own, and no model (no GPU here), with no edit anywhere
// else; the options, the bucket plan, the memory check and the calibration ask its row, never its name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/core/families.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "tests/phase4/phase4_options_support.hpp"

using phase4::testing::exit_code_of;

namespace {

int resolved = 0;

// Layers of a weight (hidden^2) and a bias (hidden) each, on hidden rows: --layers L gives 2L backward steps.
phase4::FamilyRow biased_row() {
  phase4::FamilyRow row;
  row.name = "test-biased";
  row.help = "square layers with a bias each";
  row.options = {"--hidden", "--layers"};
  row.fit_option = "--hidden";
  row.resolve = [](phase4::ModelSpec& spec) {
    ++resolved;
    spec.layers *= 2;
    spec.batch = spec.hidden;
  };
  row.layout = [](const phase4::ModelSpec& spec) {
    std::vector<std::uint64_t> sizes;
    for (int s = 0; s < spec.layers; ++s) {
      sizes.push_back(s % 2 == 0 ? std::uint64_t(spec.hidden) : std::uint64_t(spec.hidden) * spec.hidden);
    }
    return phase4::GradientLayout::of_sizes(sizes);
  };
  row.activation_floats = [](const phase4::ModelSpec&) { return 1e9; };
  row.describe = [](const phase4::ModelSpec& spec) { return "biased H=" + std::to_string(spec.hidden); };
  row.model_name = [](const phase4::ModelSpec& spec) { return "biased-" + std::to_string(spec.hidden); };
  row.whole_tensor_caps = true;
  return row;
}
const phase4::RegisterFamily kBiased(biased_row());

}  // namespace

TEST(ModelFamilies, AFamilyIsChosenByNameAndItsRowResolvesItsOptions) {
  phase4::Config config;
  ASSERT_EQ(exit_code_of({"--model-family", "test-biased", "--hidden", "64", "--layers", "3"}, &config), -1);
  EXPECT_EQ(resolved, 1);
  EXPECT_EQ(config.family, "test-biased");
  EXPECT_EQ(config.layers, 6);  // its backward steps
  EXPECT_EQ(config.batch, 64);
  const auto layout = config.layout();
  EXPECT_EQ(layout.steps(), 6);
  EXPECT_EQ(layout.elements(), 3u * 64 * 65);
  // Its caps hold whole tensors (DDP's), so no bias is cut from its weight's bucket boundary.
  const auto plan = config.plan();
  phase4::validate_plan(plan, layout);
  for (const auto& bucket : plan.buckets) {
    EXPECT_EQ(layout.ends[bucket.ready_after], bucket.end);
  }
  // Its memory: its own activations' floats beside the weights and buffers.
  EXPECT_GT(config.device_bytes(), 4e9);
  // The calibration names its model and keeps its layout, as a named model's.
  const auto c = phase4::describe_run(config.step_spec(), 1, "cpu");
  EXPECT_EQ(c.model, "biased-64");
  EXPECT_EQ(c.step_elements.size(), 6u);
}

TEST(ModelFamilies, AFamilyRefusesTheModelOptionsItDoesNotTake) {
  const int usage = ob::kExitUsage;
  EXPECT_EQ(exit_code_of({"--model-family", "test-biased", "--batch", "8"}), usage);
  EXPECT_EQ(exit_code_of({"--model-family", "test-biased", "--seq", "8"}), usage);
  EXPECT_EQ(exit_code_of({"--model-family", "test-biased", "--sweep", "shape=64x2x8"}), usage);  // not square layers
  EXPECT_EQ(exit_code_of({"--model-family", "no-such"}), usage);
  EXPECT_EQ(exit_code_of({"--model-family", "transformer"}), usage);  // needs --model
  EXPECT_EQ(exit_code_of({"--model-family", "mlp", "--model", "gpt2"}), usage);
  phase4::Config config;  // --model chooses the transformer; named, the same
  ASSERT_EQ(exit_code_of({"--model", "gpt2", "--blocks", "1"}, &config), -1);
  const std::string chosen = config.family;
  EXPECT_EQ(config.layers, static_cast<int>(phase4::parameter_tensors(config.shape, 1).size()));
  ASSERT_EQ(exit_code_of({"--model-family", chosen, "--model", "gpt2", "--blocks", "1"}, &config), -1);
  EXPECT_EQ(config.family, chosen);
  ASSERT_EQ(exit_code_of({}, &config), -1);
  EXPECT_EQ(config.family, phase4::kDefaultFamily);
  EXPECT_NE(chosen, config.family);
}
