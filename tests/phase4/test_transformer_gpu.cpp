// Phase 4's --model on GPUs under mpirun (1 and 2 ranks): a transformer's gradients against central differences of
// its loss, its training checked with every strategy, accumulation and graphs, and the causal softmax against the
// host reference. Skips without a CUDA device.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/device_info.hpp"
#include "common/cuda/handles.hpp"
#include "common/errors.hpp"
#include "phase4_chunked_nccl/model/transformer_kernels.cuh"
#include "phase4_chunked_nccl/model/transformer_model.hpp"
#include "phase4_chunked_nccl/driver/runner.hpp"
#include "tests/phase4/phase4_gpu_fixture.hpp"

using phase4_test::Phase4Gpu;
using phase4_test::row_of;

// --model: a transformer's gradients against central differences of its loss, and its training checked as the
// square layers' is.
namespace {

// Grouped-query attention (4 heads on 2 K/V heads), SwiGLU, RMSNorm, Q/K/V biases (Qwen2), an untied head.
nlohmann::json tiny_gated() {
  return {{"model_type", "qwen2"},    {"hidden_size", 64},        {"intermediate_size", 96}, {"num_hidden_layers", 3},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 97}};
}
// GPT-2's family: LayerNorm, GELU, every bias, a tied head, 8 learned positions under 16-token sequences.
nlohmann::json tiny_gpt2() {
  return {{"n_embd", 64}, {"n_layer", 2}, {"n_head", 4}, {"vocab_size", 97}, {"n_positions", 8}};
}

phase4::Config model_config(const nlohmann::json& json, const std::string& name) {
  phase4::Config config;
  config.seq = 16;
  config.micro_batch = 2;
  config.family = "transformer";  // the shape parsed here, as the family's row reads it from a file
  config.model = name;
  config.shape = phase4::parse_transformer_config(json, name);
  config.hidden = config.shape.hidden;
  config.layers = static_cast<int>(phase4::parameter_tensors(config.shape).size());
  config.batch = config.seq * config.micro_batch;
  config.bucket_mb = 0.02;  // 5,242 elements: buckets cut tensors and span small ones
  config.first_bucket_mb = 0.005;
  config.common.iters = 3;
  config.common.warmup = 1;
  config.common.check = true;
  return config;
}

}  // namespace

// Along each tensor's own gradient g (a step of 0.02 in weight space), (L(w + δ ĝ) - L(w - δ ĝ)) / 2δ is |g|, in fp32
// GEMMs: every kernel's backward (lookups, norms, the attention core, the head, the loss) against its forward.
TEST(TransformerGpu, GradientsMatchCentralDifferencesOfTheLoss) {
  if (ob::probe_cuda().devices == 0) GTEST_SKIP() << "no CUDA device";
  for (const auto& [name, json] : {std::pair{"gated", tiny_gated()}, std::pair{"gpt2", tiny_gpt2()}}) {
    auto config = model_config(json, name);
    config.tf32 = false;
    const auto cublas = ob::make_cublas();
    const auto layout = config.layout();
    ob::DeviceBuffer<float> grads(layout.elements());
    phase4::TransformerModel model(config.model_spec(), 0, cublas, grads.get(), nullptr);
    model.forward(0, nullptr);
    for (int s = 0; s < config.layers; ++s) model.backward_step(s, false, nullptr);
    const double loss = model.loss(nullptr);
    EXPECT_NEAR(loss, std::log(97.0), 1.5) << name;  // near-uniform predictions at the start
    const auto g = grads.download();
    std::vector<float> w(layout.elements());
    CUDA_CHECK(cudaMemcpy(w.data(), model.weights(), w.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const auto tensors = phase4::parameter_tensors(config.shape);
    auto loss_at = [&](std::size_t begin, std::size_t end, double step, double norm) {
      std::vector<float> moved = w;
      for (std::size_t i = begin; i < end; ++i) moved[i] = static_cast<float>(w[i] + step * g[i] / norm);
      CUDA_CHECK(cudaMemcpy(model.weights(), moved.data(), moved.size() * sizeof(float), cudaMemcpyHostToDevice));
      model.forward(0, nullptr);
      return model.loss(nullptr);
    };
    constexpr double kStep = 0.02;
    for (int s = 0; s < layout.steps(); ++s) {
      const std::size_t begin = layout.begin(s), end = layout.ends[s];
      double norm = 0;
      for (std::size_t i = begin; i < end; ++i) norm += static_cast<double>(g[i]) * g[i];
      norm = std::sqrt(norm);
      const std::string what = std::string(name) + " " + tensors[s].name;
      EXPECT_TRUE(std::isfinite(norm)) << what;
      // A key's bias shifts every score of a query alike, which the softmax ignores: its gradient is 0.
      if (tensors[s].name.find("attn.k.bias") != std::string::npos) {
        EXPECT_LT(norm, 1e-5) << what;
        continue;
      }
      EXPECT_GT(norm, 1e-5) << what;
      const double slope = (loss_at(begin, end, kStep, norm) - loss_at(begin, end, -kStep, norm)) / (2 * kStep);
      EXPECT_NEAR(slope, norm, 0.03 * norm + 2e-5) << what;
    }
    // A corrupted gradient fails the same comparison: the first block's Q gradient doubled.
    int q = 0;
    while (tensors[q].name.find("block 0 attn.q") == std::string::npos) ++q;
    double norm = 0;
    for (std::size_t i = layout.begin(q); i < layout.ends[q]; ++i) norm += static_cast<double>(g[i]) * g[i];
    norm = std::sqrt(norm);
    const double slope = (loss_at(layout.begin(q), layout.ends[q], kStep, norm) -
                          loss_at(layout.begin(q), layout.ends[q], -kStep, norm)) /
        (2 * kStep);
    EXPECT_GT(std::fabs(slope - 2 * norm), 0.03 * 2 * norm + 2e-5) << name;
  }
}

// Every strategy trains both transformers with --check: ranks in step, overlap bitwise equal to seq, every strategy
// equal to nccl (the sharded ones slicing tensors of 32 to 6,208 elements, the smallest all tail for the copy
// engines' 64-element slices on two ranks, with a prefetch of 2 forward layers); two accumulated micro-steps equal
// one step on twice the sequences; a CUDA graph's replay equal to eager execution; one backward step per tensor on
// the timeline.
TEST_F(Phase4Gpu, TransformersCheckOutWithEveryStrategyAccumulationAndGraphs) {
  for (const auto& json : {tiny_gated(), tiny_gpt2()}) {
    for (const auto& row : phase4::sync_rows()) {
      auto config = model_config(json, "tiny");
      config.sync = row.name;
      config.knobs["prefetch"] = phase4::schedule_row(row.schedule).whole_tensors ? 2 : 0;
      const auto result = run_on_own_trainer(config);
      EXPECT_EQ(result.failure, "") << row.name;
      EXPECT_EQ(row_of(result, "comm").get("wrong"), "0") << row.name;
      EXPECT_EQ(row_of(result, "overlap").get("overlap_vs_seq_bitwise"), "1") << row.name;
      EXPECT_EQ(row_of(result, "overlap").get("model"), "tiny");
      if (row.name != "nccl") {
        EXPECT_LE(row_of(result, "overlap").number("sync_vs_nccl_rel_error"), phase4::kStrategyTolerance) << row.name;
      }
    }
    auto config = model_config(json, "tiny");
    config.accum_steps = 2;
    config.graph = true;
    const auto result = run_on_own_trainer(config);
    EXPECT_EQ(result.failure, "");
    const auto& overlap = row_of(result, "overlap");
    EXPECT_EQ(overlap.get("graph_vs_eager_bitwise"), "1");
    EXPECT_LE(overlap.number("accum_vs_big_batch_rel_error"), 1e-5);
    if (rank_ == 0) {
      int backward = 0;
      for (const auto& e : result.events) backward += e.lane == "overlap:compute" && e.name == "backward";
      EXPECT_EQ(backward, config.common.iters * config.layers * ranks_);
    }
  }
}

// The attention core's softmax both ways against double precision on the host, at row lengths on both sides of the
// register kernels' sizes (1 to 32 x 256 columns) and beyond them (8193: the kernels that read their rows again):
// every row of each length's square up to 4096 (its first 3 at 8193), scores up to +-8, the backward's scale 0.125.
// The comparison catches one wrong probability above the diagonal.
TEST(TransformerGpu, CausalSoftmaxBothWaysMatchesTheHostReference) {
  if (ob::probe_cuda().devices == 0) GTEST_SKIP() << "no CUDA device";
  auto worst = [](const std::vector<float>& got, const std::vector<double>& want) {
    double w = 0;
    for (std::size_t i = 0; i < got.size(); ++i) w = std::max(w, std::abs(got[i] - want[i]));
    return w;
  };
  for (int s : {1, 255, 256, 257, 1000, 2048, 4096, 8193}) {
    const std::size_t rows = s <= 4096 ? s : 3, n = rows * s;
    std::vector<float> scores(n), dp(n);
    for (std::size_t i = 0; i < n; ++i) {
      scores[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i))) * 8.0f;
      dp[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
    }
    ob::DeviceBuffer<float> p(n), d(n);
    CUDA_CHECK(cudaMemcpy(p.get(), scores.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d.get(), dp.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    phase4::causal_softmax(p.get(), rows, s, nullptr);
    phase4::softmax_backward(p.get(), d.get(), rows, s, 0.125f, nullptr);
    std::vector<float> got_p(n), got_d(n);
    CUDA_CHECK(cudaMemcpy(got_p.data(), p.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got_d.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> want_p(n, 0.0), want_d(n);
    for (std::size_t r = 0; r < rows; ++r) {  // row r is position r % s: it sees columns 0..r % s
      const int seen = static_cast<int>(r % s);
      const float* x = scores.data() + r * s;
      double* w = want_p.data() + r * s;
      double top = -INFINITY, sum = 0, dot = 0;
      for (int c = 0; c <= seen; ++c) top = std::max(top, static_cast<double>(x[c]));
      for (int c = 0; c <= seen; ++c) sum += std::exp(x[c] - top);
      for (int c = 0; c <= seen; ++c) w[c] = std::exp(x[c] - top) / sum;
      for (int c = 0; c < s; ++c) dot += w[c] * dp[r * s + c];
      for (int c = 0; c < s; ++c) want_d[r * s + c] = 0.125 * w[c] * (dp[r * s + c] - dot);
    }
    EXPECT_LT(worst(got_p, want_p), 1e-5) << "seq " << s;
    EXPECT_LT(worst(got_d, want_d), 1e-5) << "seq " << s;
    if (s > 2) {
      got_p[s + 2] = 1e-3f;  // row 1 sees columns 0 and 1 only
      EXPECT_GT(worst(got_p, want_p), 1e-5) << "seq " << s;
    }
  }
}
