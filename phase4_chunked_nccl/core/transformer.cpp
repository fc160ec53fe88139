// Transformer shapes from presets and config.json files (transformer.hpp). The presets hold the fields of the
// models' published config.json files; their parameter counts are the published ones (tests/phase4/test_transformer.cpp).
#include "phase4_chunked_nccl/core/transformer.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/options.hpp"

namespace phase4 {
namespace {

// The largest values a shape may hold: far beyond any model's, small enough that its sums stay exact in doubles.
constexpr std::int64_t kLargestDimension = 1 << 20, kLargestVocab = 1 << 24, kLargestLayers = 4096;

TransformerShape gpt2(const std::string& name, int hidden, int layers, int heads) {
  TransformerShape s;
  s.name = name;
  s.hidden = hidden, s.layers = layers, s.heads = s.kv_heads = heads, s.head_dim = hidden / heads;
  s.intermediate = 4 * hidden, s.vocab = 50257, s.positions = 1024, s.tied = true;
  s.mlp = MlpKind::kGelu, s.norm = NormKind::kLayerNorm;
  s.qkv_bias = s.o_bias = s.mlp_bias = true;
  return s;
}

TransformerShape gated(const std::string& name, int hidden, int intermediate, int layers, int heads, int kv_heads,
                       std::int64_t vocab, bool qkv_bias) {
  TransformerShape s;
  s.name = name;
  s.hidden = hidden, s.intermediate = intermediate, s.layers = layers, s.heads = heads, s.kv_heads = kv_heads;
  s.head_dim = hidden / heads, s.vocab = vocab, s.qkv_bias = qkv_bias;
  return s;
}

const std::vector<TransformerShape>& presets() {
  static const std::vector<TransformerShape> all = {
      gpt2("gpt2", 768, 12, 12),
      gpt2("gpt2-xl", 1600, 48, 25),
      gated("llama3-8b", 4096, 14336, 32, 32, 8, 128256, false),
      gated("qwen2.5-7b", 3584, 18944, 28, 28, 4, 152064, true),
  };
  return all;
}

[[noreturn]] void bad(const std::string& option, const std::string& source, const std::string& why) {
  throw ob::UsageError(option + ": '" + source + "' is invalid: " + why);
}

// config[key] as a whole number in [1, largest]; `fallback` when absent (or null) and given, else a missing key.
std::int64_t whole(const nlohmann::json& config, const std::string& key, std::int64_t largest,
                   const std::string& source, const std::string& option, std::int64_t fallback = 0) {
  if (!config.contains(key) || config.at(key).is_null()) {
    if (fallback > 0) return fallback;
    bad(option, source, "missing key '" + key + "'");
  }
  const auto& value = config.at(key);
  if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > largest) {
    bad(option, source,
        "key '" + key + "' is " + value.dump() + ": a whole number from 1 to " + std::to_string(largest));
  }
  return value.get<std::int64_t>();
}

bool flag(const nlohmann::json& config, const std::string& key, bool fallback, const std::string& source,
          const std::string& option) {
  if (!config.contains(key) || config.at(key).is_null()) return fallback;
  if (!config.at(key).is_boolean())
    bad(option, source, "key '" + key + "' is " + config.at(key).dump() + ": true or false");
  return config.at(key).get<bool>();
}

// The keys every config shares once the family's names are read: heads dividing hidden, kv heads dividing heads.
void check_heads(const TransformerShape& s, bool head_dim_given, const std::string& heads_key,
                 const std::string& kv_key, const std::string& source, const std::string& option) {
  if (!head_dim_given && s.hidden % s.heads != 0) {
    bad(option, source,
        "key '" + heads_key + "' (" + std::to_string(s.heads) + ") does not divide the hidden size (" +
            std::to_string(s.hidden) + ")");
  }
  if (s.heads % s.kv_heads != 0) {
    bad(option, source,
        "key '" + kv_key + "' (" + std::to_string(s.kv_heads) + ") does not divide '" + heads_key + "' (" +
            std::to_string(s.heads) + ")");
  }
}

TransformerShape parse_gpt2(const nlohmann::json& c, const std::string& source, const std::string& option) {
  TransformerShape s = gpt2(source, 1, 1, 1);
  s.hidden = static_cast<int>(whole(c, "n_embd", kLargestDimension, source, option));
  s.layers = static_cast<int>(whole(c, "n_layer", kLargestLayers, source, option));
  s.heads = s.kv_heads = static_cast<int>(whole(c, "n_head", kLargestDimension, source, option));
  s.intermediate = static_cast<int>(whole(c, "n_inner", kLargestDimension, source, option, 4LL * s.hidden));
  s.vocab = whole(c, "vocab_size", kLargestVocab, source, option);
  s.positions = static_cast<int>(whole(c, "n_positions", kLargestDimension, source, option));
  s.tied = flag(c, "tie_word_embeddings", true, source, option);
  check_heads(s, false, "n_head", "n_head", source, option);
  s.head_dim = s.hidden / s.heads;
  return s;
}

TransformerShape parse_gated(const nlohmann::json& c, const std::string& source, const std::string& option) {
  TransformerShape s;
  s.name = source;
  s.hidden = static_cast<int>(whole(c, "hidden_size", kLargestDimension, source, option));
  s.intermediate = static_cast<int>(whole(c, "intermediate_size", kLargestDimension, source, option));
  s.layers = static_cast<int>(whole(c, "num_hidden_layers", kLargestLayers, source, option));
  s.heads = static_cast<int>(whole(c, "num_attention_heads", kLargestDimension, source, option));
  s.kv_heads = static_cast<int>(whole(c, "num_key_value_heads", kLargestDimension, source, option, s.heads));
  s.vocab = whole(c, "vocab_size", kLargestVocab, source, option);
  const bool head_dim_given = c.contains("head_dim") && !c.at("head_dim").is_null();
  check_heads(s, head_dim_given, "num_attention_heads", "num_key_value_heads", source, option);
  s.head_dim = static_cast<int>(whole(c, "head_dim", kLargestDimension, source, option, s.hidden / s.heads));
  s.tied = flag(c, "tie_word_embeddings", false, source, option);
  const bool attention_bias = flag(c, "attention_bias", false, source, option);
  s.qkv_bias = attention_bias || c.value("model_type", "") == "qwen2";
  s.o_bias = attention_bias;
  s.mlp_bias = flag(c, "mlp_bias", false, source, option);
  return s;
}

}  // namespace

std::vector<std::string> transformer_presets() {
  std::vector<std::string> names;
  for (const auto& preset : presets()) names.push_back(preset.name);
  return names;
}

TransformerShape parse_transformer_config(const nlohmann::json& config, const std::string& source,
                                          const std::string& option) {
  if (!config.is_object()) bad(option, source, "not a JSON object");
  try {
    // A mixture of experts is refused by name, not read as the dense model of one expert (Mixtral-8x7B's config
    // read so is about 7 B parameters of its 46.7 B); an architecture this parser does not know, likewise.
    for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
                            "num_experts_per_tok", "moe_num_experts", "n_shared_experts", "moe_topk"}) {
      if (config.contains(key) && !config.at(key).is_null())
        bad(option, source,
            std::string("a mixture-of-experts config (") + key + " " + config.at(key).dump() +
                "): its experts are not modelled; give a dense model");
    }
    if (config.contains("model_type")) {
      const std::string type = config.at("model_type").get<std::string>();
      if (type != "gpt2" && type != "llama" && type != "mistral" && type != "qwen2")
        bad(option, source, "model_type '" + type + "' is not one this suite models (gpt2, llama, mistral, qwen2)");
      if ((type == "gpt2") != config.contains("n_embd"))
        bad(option, source, "model_type '" + type + "' with " + (type == "gpt2" ? "no n_embd" : "n_embd"));
    }
    return config.contains("n_embd") ? parse_gpt2(config, source, option) : parse_gated(config, source, option);
  } catch (const nlohmann::json::exception& error) {  // a key of the wrong type (a number for model_type, say)
    bad(option, source, std::string("a key has the wrong type (") + error.what() + ")");
  }
  return {};
}

TransformerShape load_transformer(const std::string& name_or_file, const std::string& option) {
  for (const auto& preset : presets()) {
    if (preset.name == name_or_file) return preset;
  }
  std::error_code error;
  if (!std::filesystem::exists(name_or_file, error)) {
    bad(option, name_or_file, "neither a preset (" + ob::join(transformer_presets()) + ") nor a readable config.json");
  }
  const std::string text = ob::read_input_file(option, name_or_file, kMostConfigBytes);
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) bad(option, name_or_file, "not JSON");
  return parse_transformer_config(json, name_or_file, option);
}

nlohmann::json shape_json(const TransformerShape& s) {
  return {{"name", s.name},
          {"hidden", s.hidden},
          {"intermediate", s.intermediate},
          {"layers", s.layers},
          {"heads", s.heads},
          {"kv_heads", s.kv_heads},
          {"head_dim", s.head_dim},
          {"vocab", s.vocab},
          {"positions", s.positions},
          {"tied", s.tied},
          {"mlp", s.mlp == MlpKind::kSwiGlu ? "swiglu" : "gelu"},
          {"norm", s.norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm"},
          {"qkv_bias", s.qkv_bias},
          {"o_bias", s.o_bias},
          {"mlp_bias", s.mlp_bias}};
}

std::vector<ParamTensor> parameter_tensors(const TransformerShape& s, int blocks) {
  const int kept = blocks > 0 && blocks < s.layers ? blocks : s.layers;
  const std::int64_t h = s.hidden, q = static_cast<std::int64_t>(s.heads) * s.head_dim;
  const std::int64_t kv = static_cast<std::int64_t>(s.kv_heads) * s.head_dim, inter = s.intermediate;
  const std::int64_t norm_vectors = s.norm == NormKind::kLayerNorm ? 2 : 1;
  std::vector<ParamTensor> out;
  auto matrix = [&](const std::string& name, int block, std::int64_t in, std::int64_t cols, bool bias) {
    out.push_back({name, block, in, cols, true});
    if (bias) out.push_back({name + ".bias", block, cols, 1, false});
  };
  auto norm = [&](const std::string& name, int block) { out.push_back({name, block, h * norm_vectors, 1, false}); };
  if (!s.tied) matrix("lm_head", -1, h, s.vocab, false);
  norm("final_norm", -1);
  for (int b = kept - 1; b >= 0; --b) {
    const std::string at = "block " + std::to_string(b) + " ";
    if (s.mlp == MlpKind::kSwiGlu) {
      matrix(at + "mlp.down", b, inter, h, s.mlp_bias);
      matrix(at + "mlp.up", b, h, inter, s.mlp_bias);
      matrix(at + "mlp.gate", b, h, inter, s.mlp_bias);
    } else {
      matrix(at + "mlp.proj", b, inter, h, s.mlp_bias);
      matrix(at + "mlp.fc", b, h, inter, s.mlp_bias);
    }
    norm(at + "norm2", b);
    matrix(at + "attn.o", b, q, h, s.o_bias);
    matrix(at + "attn.v", b, h, kv, s.qkv_bias);
    matrix(at + "attn.k", b, h, kv, s.qkv_bias);
    matrix(at + "attn.q", b, h, q, s.qkv_bias);
    norm(at + "norm1", b);
  }
  if (s.positions > 0) out.push_back({"embed_positions", -1, s.positions, h, false});
  if (s.tied) {
    out.push_back({"embed_tokens (tied lm_head)", -1, h, s.vocab, true});
  } else {
    out.push_back({"embed_tokens", -1, s.vocab, h, false});
  }
  return out;
}

std::int64_t parameter_count(const TransformerShape& shape, int blocks) {
  std::int64_t total = 0;
  for (const auto& tensor : parameter_tensors(shape, blocks)) total += tensor.elements();
  return total;
}

double attention_flops_per_token(const TransformerShape& s, int seq) {
  return 4.0 * seq * static_cast<double>(s.heads) * s.head_dim;
}

StepMemory step_memory(const TransformerShape& s, int blocks, int seq, int micro_batch, double gradient_buffers) {
  const int kept = blocks > 0 && blocks < s.layers ? blocks : s.layers;
  const double h = s.hidden, q = static_cast<double>(s.heads) * s.head_dim,
               kv = static_cast<double>(s.kv_heads) * s.head_dim;
  const double mlp = (s.mlp == MlpKind::kSwiGlu ? 3.0 : 2.0) * s.intermediate;
  const double repeated = s.kv_heads < s.heads ? 2 * q : 0;  // K and V repeated to the query heads (GQA)
  // Per token and block: the block's input and first norm, q, k, v (and their repeats), the attention
  // probabilities, the attention's output, the residual after it and the second norm, the MLP's intermediates.
  // Outside: the last block's output, the final norm and the logits (their gradient written in place).
  const double per_block = 2 * h + q + 2 * kv + repeated + static_cast<double>(s.heads) * seq + q + 2 * h + mlp;
  const double tokens = static_cast<double>(seq) * micro_batch;
  const double params = static_cast<double>(parameter_count(s, blocks));
  StepMemory m;
  m.weights = 4 * params;
  m.gradients = 4 * params * gradient_buffers;
  m.activations = 4 * tokens * (kept * per_block + 2 * h + static_cast<double>(s.vocab));
  // One block's backward at a time: the residual's gradients (two) and a norm's, the attention's output, q, k, v
  // (and repeats), the MLP's intermediates; one sequence's attention probabilities.
  m.work = 4 * tokens * (3 * h + 2 * q + 2 * kv + repeated + mlp) + 4.0 * s.heads * seq * static_cast<double>(seq);
  return m;
}

}  // namespace phase4
