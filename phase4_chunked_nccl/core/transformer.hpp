// Real model shapes (METRICS.md, "Transformer shapes"): a decoder-only transformer described by a Hugging Face style
// config.json (Llama, Mistral and Qwen2 keys, or GPT-2's) or by a built-in preset with the same fields; the tensors
// that get a gradient, in the order a backward pass completes them (the LM head first, the token embedding last),
// which is what data-parallel gradient buckets are cut from; and the device memory one rank's fp32 SGD step holds.
// Plain C++ (no CUDA): phase4_model prints it, the tests check it against the models' published sizes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace phase4 {

enum class MlpKind { kGelu, kSwiGlu };  // fc + proj (GPT-2), or gate + up + down (Llama, Qwen2)
enum class NormKind { kLayerNorm, kRmsNorm };  // weight and bias (GPT-2), or weight only

struct TransformerShape {
  std::string name;  // the preset's name, or the config file's path
  int hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t vocab = 0;
  int positions = 0;  // learned position embeddings (GPT-2's n_positions); 0: rotary, none
  bool tied = false;  // the LM head is the token embedding
  MlpKind mlp = MlpKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool qkv_bias = false;  // q, k and v carry a bias (Qwen2; attention_bias; GPT-2)
  bool o_bias = false;  // the attention's output projection does (attention_bias; GPT-2)
  bool mlp_bias = false;  // the MLP's projections do (mlp_bias; GPT-2)
};

// One tensor that gets a gradient: a matrix of `rows` x `cols` used as a GEMM (rows in, cols out), or a vector
// (`cols` 1: a bias or a norm's weight), or an embedding table read by lookup.
struct ParamTensor {
  std::string name;  // "lm_head", "block 31 mlp.down", "embed_tokens"
  int block = -1;  // the block it belongs to, -1 outside them
  std::int64_t rows = 0, cols = 0;
  bool gemm = false;  // forward work is a GEMM on every token (not a lookup, not elementwise)

  std::int64_t elements() const { return rows * cols; }
  // Forward multiply-adds x 2 per token of this tensor's GEMM (0 for a lookup or a vector).
  double forward_flops_per_token() const { return gemm ? 2.0 * static_cast<double>(rows) * cols : 0.0; }
};

// The presets' names: gpt2, gpt2-xl, llama3-8b, qwen2.5-7b.
std::vector<std::string> transformer_presets();

// The largest config.json read (Hugging Face's are a few KB).
constexpr std::uintmax_t kMostConfigBytes = 16u << 20;
// A preset by name, or a config.json by path; throws ob::UsageError naming `option` (and, for a file, the key).
TransformerShape load_transformer(const std::string& name_or_file, const std::string& option = "--model");
// The shape a config.json's object describes; `source` names it in errors.
TransformerShape parse_transformer_config(const nlohmann::json& config, const std::string& source,
                                          const std::string& option = "--model");

// The shape's fields as JSON (keys as the struct's members; mlp "swiglu" or "gelu", norm "rmsnorm" or "layernorm"):
// what overlap_bench/ddp/torch_transformer.py builds the same layers from.
nlohmann::json shape_json(const TransformerShape& shape);

// Every tensor with a gradient, in backward order, of the first `blocks` blocks (0: all) with the embeddings, the
// final norm and the LM head (a tied head is the embedding: one tensor, completed last).
std::vector<ParamTensor> parameter_tensors(const TransformerShape& shape, int blocks = 0);
std::int64_t parameter_count(const TransformerShape& shape, int blocks = 0);

// The attention core's forward flops per token and block (Q·Kᵀ and A·V over `seq` positions; no parameters).
double attention_flops_per_token(const TransformerShape& shape, int seq);

// What one rank's fp32 SGD step holds on the device (bytes): weights; gradients times the strategy's buffers (its
// gradient-sized buffers, the gradient itself included: SyncRow::buffers); activations kept for the backward; the
// backward's work buffers (one block's at a time).
struct StepMemory {
  double weights = 0, gradients = 0, activations = 0, work = 0;
  double total() const { return weights + gradients + activations + work; }
};
StepMemory step_memory(const TransformerShape& shape, int blocks, int seq, int micro_batch, double gradient_buffers);

}  // namespace phase4
