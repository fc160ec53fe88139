// Real model shapes (transformer.hpp): every preset's parameter count is its model's published one, the shipped
// config.json files (tests/data/models) give the presets' shapes, the gradient tensors come in backward order, the
// memory estimate is its stated sum, and bad configs are refused naming the key.
#include <gtest/gtest.h>

#include <string>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"

namespace {

const std::string kModels = OVERLAP_TEST_DATA_DIR "/models/";

std::string usage_error(const nlohmann::json& config) {
  try {
    phase4::parse_transformer_config(config, "c.json");
  } catch (const ob::UsageError& e) {
    return e.what();
  }
  return "";
}

nlohmann::json llama() {
  return nlohmann::json::parse(R"({"hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
}

}  // namespace

// Published sizes: the models' cards and a parameter count of the Hugging Face checkpoints.
TEST(Transformer, EveryPresetHasItsModelsPublishedParameterCount) {
  EXPECT_EQ(phase4::parameter_count(phase4::load_transformer("gpt2")), 124439808);
  EXPECT_EQ(phase4::parameter_count(phase4::load_transformer("gpt2-xl")), 1557611200);
  EXPECT_EQ(phase4::parameter_count(phase4::load_transformer("llama3-8b")), 8030261248);
  EXPECT_EQ(phase4::parameter_count(phase4::load_transformer("qwen2.5-7b")), 7615616512);
  EXPECT_EQ(phase4::transformer_presets(), (std::vector<std::string>{"gpt2", "gpt2-xl", "llama3-8b", "qwen2.5-7b"}));
}

TEST(Transformer, ShippedConfigFilesGiveThePresetsShapes) {
  for (const std::string name : {"gpt2", "llama3-8b"}) {
    const auto file = phase4::load_transformer(kModels + name + ".config.json");
    const auto preset = phase4::load_transformer(name);
    EXPECT_EQ(phase4::parameter_count(file), phase4::parameter_count(preset)) << name;
    EXPECT_EQ(file.kv_heads, preset.kv_heads) << name;
    EXPECT_EQ(file.tied, preset.tied) << name;
    EXPECT_EQ(file.mlp, preset.mlp) << name;
    EXPECT_EQ(phase4::parameter_tensors(file).size(), phase4::parameter_tensors(preset).size()) << name;
  }
}

TEST(Transformer, GradientsComeInBackwardOrder) {
  const auto llama3 = phase4::parameter_tensors(phase4::load_transformer("llama3-8b"));
  EXPECT_EQ(llama3.front().name, "lm_head");
  EXPECT_EQ(llama3.front().elements(), 4096LL * 128256);
  EXPECT_EQ(llama3.back().name, "embed_tokens");
  EXPECT_EQ(llama3[2].name, "block 31 mlp.down");
  EXPECT_EQ(llama3[8].name, "block 31 attn.k");  // grouped-query K: 8 heads of 128
  EXPECT_EQ(llama3[8].cols, 1024);
  int previous = 1 << 30;
  for (const auto& t : llama3) {
    if (t.block < 0) continue;
    EXPECT_LE(t.block, previous) << t.name;
    previous = t.block;
  }
  const auto tied = phase4::parameter_tensors(phase4::load_transformer("gpt2"));
  EXPECT_EQ(tied.front().name, "final_norm");  // no separate head: the tied one completes with the embedding, last
  EXPECT_EQ(tied.back().name, "embed_tokens (tied lm_head)");
  EXPECT_EQ(tied[tied.size() - 2].name, "embed_positions");
}

TEST(Transformer, TheFirstBlocksKeepTheEmbeddingsAndTheHeadWhole) {
  const auto shape = phase4::load_transformer("llama3-8b");
  const std::int64_t outside = 2LL * 128256 * 4096 + 4096, block = (8030261248 - outside) / 32;
  EXPECT_EQ(phase4::parameter_count(shape, 2), outside + 2 * block);
  EXPECT_EQ(phase4::parameter_count(shape, 32), phase4::parameter_count(shape));
}

TEST(Transformer, TheMemoryEstimateIsItsStatedSum) {
  const auto gpt2 = phase4::load_transformer("gpt2");
  const auto m = phase4::step_memory(gpt2, 0, 1024, 2, 2.5);
  const double params = 124439808;
  EXPECT_DOUBLE_EQ(m.weights, 4 * params);
  EXPECT_DOUBLE_EQ(m.gradients, 4 * params * 2.5);
  // Per token and block: 2h + q + 2kv + heads x seq + q + 2h + 2 x intermediate; outside: 2h + vocab.
  const double per_block = 2 * 768 + 768 + 2 * 768 + 12 * 1024 + 768 + 2 * 768 + 2 * 3072;
  EXPECT_DOUBLE_EQ(m.activations, 4.0 * 2048 * (12 * per_block + 2 * 768 + 50257));
  // One block's backward: 3h + 2q + 2kv + 2 x intermediate per token, and one sequence's probabilities.
  EXPECT_DOUBLE_EQ(m.work, 4.0 * 2048 * (3 * 768 + 2 * 768 + 2 * 768 + 2 * 3072) + 4.0 * 12 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(m.total(), m.weights + m.gradients + m.activations + m.work);
  // Grouped-query attention keeps K and V repeated to the query heads: 2q more per token and block, and 2q more work.
  const auto llama = phase4::load_transformer("llama3-8b");
  const auto one = phase4::step_memory(llama, 1, 16, 1, 1), two = phase4::step_memory(llama, 2, 16, 1, 1);
  const double llama_block = 2 * 4096 + 4096 + 2 * 1024 + 2 * 4096 + 32 * 16 + 4096 + 2 * 4096 + 3 * 14336;
  EXPECT_DOUBLE_EQ(two.activations - one.activations, 4.0 * 16 * llama_block);
  EXPECT_DOUBLE_EQ(one.work, 4.0 * 16 * (3 * 4096 + 2 * 4096 + 2 * 1024 + 2 * 4096 + 3 * 14336) + 4.0 * 32 * 16 * 16);
  EXPECT_DOUBLE_EQ(phase4::attention_flops_per_token(gpt2, 1024), 4.0 * 1024 * 768);
}

TEST(Transformer, BadConfigsAreRefusedNamingTheKey) {
  auto config = llama();
  config.erase("num_hidden_layers");
  EXPECT_NE(usage_error(config).find("missing key 'num_hidden_layers'"), std::string::npos) << usage_error(config);
  config = llama();
  config["num_attention_heads"] = 0;
  EXPECT_NE(usage_error(config).find("key 'num_attention_heads' is 0"), std::string::npos) << usage_error(config);
  config = llama();
  config["num_attention_heads"] = 30;
  EXPECT_NE(usage_error(config).find("key 'num_attention_heads' (30) does not divide the hidden size (4096)"),
            std::string::npos)
      << usage_error(config);
  config = llama();
  config["num_key_value_heads"] = 3;
  EXPECT_NE(usage_error(config).find("key 'num_key_value_heads' (3) does not divide"), std::string::npos);
  config = llama();
  config["vocab_size"] = "128256";
  EXPECT_NE(usage_error(config).find("key 'vocab_size' is \"128256\""), std::string::npos) << usage_error(config);
  config = llama();
  config["tie_word_embeddings"] = 1;
  EXPECT_NE(usage_error(config).find("key 'tie_word_embeddings' is 1: true or false"), std::string::npos);
  EXPECT_NE(usage_error(nlohmann::json::array()).find("not a JSON object"), std::string::npos);
  EXPECT_NE(usage_error(nlohmann::json::parse(R"({"n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257})"))
                .find("missing key 'n_positions'"),
            std::string::npos);
  config = llama();
  config["head_dim"] = 128;
  config["num_attention_heads"] = 24;  // an explicit head_dim frees the heads from dividing the hidden size
  EXPECT_EQ(usage_error(config), "");
  EXPECT_THROW(phase4::load_transformer("llama-9000"), ob::UsageError);
}

// A mixture of experts (Mixtral-8x7B's config) is refused by name, never read as one dense expert; an architecture
// the parser does not know is refused, never read as Llama; a known one with the other family's keys likewise.
TEST(Transformer, AMixtureOfExpertsAndAnUnknownArchitectureAreRefusedByName) {
  nlohmann::json mixtral = llama();
  mixtral["model_type"] = "mixtral";
  mixtral["num_local_experts"] = 8;
  mixtral["num_experts_per_tok"] = 2;
  EXPECT_NE(usage_error(mixtral).find("a mixture-of-experts config (num_local_experts 8)"), std::string::npos)
      << usage_error(mixtral);
  nlohmann::json deepseek = llama();
  deepseek["n_routed_experts"] = 64;
  EXPECT_NE(usage_error(deepseek).find("mixture-of-experts"), std::string::npos);
  nlohmann::json routed = llama();  // a Llama-typed config naming its experts only by these keys (issue 83)
  routed["num_experts_per_tok"] = 2;
  routed["moe_num_experts"] = 16;
  EXPECT_NE(usage_error(routed).find("a mixture-of-experts config"), std::string::npos) << usage_error(routed);
  nlohmann::json unknown = llama();
  unknown["model_type"] = "falcon";
  EXPECT_NE(usage_error(unknown).find("model_type 'falcon' is not one this suite models"), std::string::npos);
  nlohmann::json crossed = llama();
  crossed["model_type"] = "gpt2";
  EXPECT_NE(usage_error(crossed).find("model_type 'gpt2' with no n_embd"), std::string::npos);
  for (const char* type : {"llama", "mistral", "qwen2"}) {
    nlohmann::json known = llama();
    known["model_type"] = type;
    EXPECT_EQ(usage_error(known), "") << type;
  }
}
