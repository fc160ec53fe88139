#include "phase4_chunked_nccl/model/transformer_model.hpp"

#include <algorithm>
#include <functional>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/model/transformer_kernels.cuh"

namespace phase4 {
namespace {

// A tensor's name without "block N " and ".bias": "attn.q", "norm1", "lm_head", "embed_tokens (tied lm_head)".
std::string base_name(const ParamTensor& t, bool* bias) {
  std::string name = t.name;
  if (t.block >= 0) name = name.substr(name.find(' ', 6) + 1);
  *bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  if (*bias) name.resize(name.size() - 5);
  return name;
}

TransformerModel::Part part_of(const std::string& name) {
  using Part = TransformerModel::Part;
  // clang-format off
  static const std::vector<std::pair<std::string, Part>> parts = {
      {"lm_head", Part::kLmHead}, {"final_norm", Part::kFinalNorm}, {"embed_positions", Part::kEmbedPositions},
      {"embed_tokens", Part::kEmbedTokens}, {"embed_tokens (tied lm_head)", Part::kEmbedTokens},
      {"norm1", Part::kNorm1}, {"attn.q", Part::kQ}, {"attn.k", Part::kK}, {"attn.v", Part::kV}, {"attn.o", Part::kO},
      {"norm2", Part::kNorm2}, {"mlp.gate", Part::kGate}, {"mlp.up", Part::kUp}, {"mlp.down", Part::kDown},
      {"mlp.fc", Part::kFc}, {"mlp.proj", Part::kProj}};
  // clang-format on
  for (const auto& [known, part] : parts) {
    if (known == name) return part;
  }
  throw std::logic_error("TransformerModel: no part named '" + name + "'");
}

// A splitmix64 step: the tokens' generator (the same on the host for every build).
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

TransformerModel::TransformerModel(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights)
    : Model(spec.layout().elements(), grads, weights), shape_(spec.shape),
      tensors_(parameter_tensors(spec.shape, spec.blocks)), layout_(spec.layout()), cublas_(cublas), tf32_(spec.tf32),
      rms_(spec.shape.norm == NormKind::kRmsNorm), swiglu_(spec.shape.mlp == MlpKind::kSwiGlu), seq_(spec.seq),
      micro_batch_(spec.micro_batch), micro_steps_(spec.accum_steps), tokens_(spec.seq * spec.micro_batch),
      h_(spec.shape.hidden), qd_(spec.shape.heads * spec.shape.head_dim),
      kvd_(spec.shape.kv_heads * spec.shape.head_dim), inter_(spec.shape.intermediate), heads_(spec.shape.heads),
      kv_heads_(spec.shape.kv_heads), d_(spec.shape.head_dim), vocab_(static_cast<int>(spec.shape.vocab)),
      kept_(spec.blocks > 0 && spec.blocks < spec.shape.layers ? spec.blocks : spec.shape.layers), seed_(spec.seed) {
  index_tensors();
  allocate();
  make_tokens(rank);
  CUDA_CHECK(cudaMemset(this->grads(), 0, elements() * sizeof(float)));
  reset_weights(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
}

void TransformerModel::index_tensors() {
  blocks_.assign(kept_, {});
  for (int i = 0; i < static_cast<int>(tensors_.size()); ++i) {
    bool bias = false;
    const Part part = part_of(base_name(tensors_[i], &bias));
    const int block = tensors_[i].block;
    steps_.push_back({part, block, bias});
    if (block < 0) {
      int& slot = part == Part::kLmHead   ? lm_head_
          : part == Part::kFinalNorm      ? final_norm_
          : part == Part::kEmbedPositions ? embed_positions_
                                          : embed_tokens_;
      slot = i;
      continue;
    }
    BlockTensors& b = blocks_[block];
    auto set = [&](int& matrix, int& its_bias) { (bias ? its_bias : matrix) = i; };
    switch (part) {
      case Part::kNorm1: b.norm1 = i; break;
      case Part::kNorm2: b.norm2 = i; break;
      case Part::kQ: set(b.q, b.q_bias); break;
      case Part::kK: set(b.k, b.k_bias); break;
      case Part::kV: set(b.v, b.v_bias); break;
      case Part::kO: set(b.o, b.o_bias); break;
      case Part::kGate:
      case Part::kFc: set(b.m1, b.m1_bias); break;
      case Part::kUp: set(b.m2, b.m2_bias); break;
      case Part::kDown:
      case Part::kProj: set(b.down, b.down_bias); break;
      default: throw std::logic_error("TransformerModel: a block holds " + tensors_[i].name);
    }
  }
}

void TransformerModel::allocate() {
  const bool gqa = kv_heads_ < heads_;
  const std::size_t T = tokens_, L = kept_;
  const std::size_t probabilities = static_cast<std::size_t>(micro_batch_) * heads_ * seq_ * seq_;
  x_ = ob::DeviceBuffer<float>((L + 1) * rows(h_));
  n1_ = ob::DeviceBuffer<float>(L * rows(h_));
  xm_ = ob::DeviceBuffer<float>(L * rows(h_));
  n2_ = ob::DeviceBuffer<float>(L * rows(h_));
  stats1_ = ob::DeviceBuffer<float>(L * rows(2));
  stats2_ = ob::DeviceBuffer<float>(L * rows(2));
  q_ = ob::DeviceBuffer<float>(L * rows(qd_));
  k_ = ob::DeviceBuffer<float>(L * rows(kvd_));
  v_ = ob::DeviceBuffer<float>(L * rows(kvd_));
  k_rep_ = ob::DeviceBuffer<float>(gqa ? L * rows(qd_) : 0);
  v_rep_ = ob::DeviceBuffer<float>(gqa ? L * rows(qd_) : 0);
  p_ = ob::DeviceBuffer<float>(L * probabilities);
  attn_ = ob::DeviceBuffer<float>(L * rows(qd_));
  m1_ = ob::DeviceBuffer<float>(L * rows(inter_));
  m2_ = ob::DeviceBuffer<float>(swiglu_ ? L * rows(inter_) : 0);
  act_ = ob::DeviceBuffer<float>(L * rows(inter_));
  nf_ = ob::DeviceBuffer<float>(rows(h_));
  stats_f_ = ob::DeviceBuffer<float>(rows(2));
  logits_ = ob::DeviceBuffer<float>(rows(vocab_));
  dx_ = ob::DeviceBuffer<float>(rows(h_));
  dxm_ = ob::DeviceBuffer<float>(rows(h_));
  dn_ = ob::DeviceBuffer<float>(rows(h_));
  dattn_ = ob::DeviceBuffer<float>(rows(qd_));
  dq_ = ob::DeviceBuffer<float>(rows(qd_));
  dk_ = ob::DeviceBuffer<float>(rows(kvd_));
  dv_ = ob::DeviceBuffer<float>(rows(kvd_));
  dk_rep_ = ob::DeviceBuffer<float>(gqa ? rows(qd_) : 0);
  dv_rep_ = ob::DeviceBuffer<float>(gqa ? rows(qd_) : 0);
  dp_ = ob::DeviceBuffer<float>(static_cast<std::size_t>(heads_) * seq_ * seq_);
  da_ = ob::DeviceBuffer<float>(rows(inter_));
  dm1_ = ob::DeviceBuffer<float>(rows(inter_));
  dm2_ = ob::DeviceBuffer<float>(swiglu_ ? rows(inter_) : 0);
  partials_ = ob::DeviceBuffer<float>(column_partials(T, std::max({2 * h_, inter_, qd_})));
  loss_ = ob::DeviceBuffer<double>(1);
}

void TransformerModel::make_tokens(int rank) {
  const std::size_t T = tokens_;
  // Each rank's tokens differ (seeded by rank); micro-batch k is sequences [k * micro_batch, (k + 1) * micro_batch)
  // of one K * micro_batch batch (token index k * T + t), as in the MLP. The target of a token is the next one in
  // its sequence (the last's: one more drawn).
  const std::size_t all = T * micro_steps_;
  const std::uint64_t data_seed = seed_ * 1000003u + 17u * static_cast<std::uint64_t>(rank + 1);
  std::vector<int> tokens(all + 1);
  for (std::size_t i = 0; i <= all; ++i) tokens[i] = static_cast<int>(mix(data_seed ^ mix(i)) % vocab_);
  std::vector<int> targets(all);
  for (std::size_t i = 0; i < all; ++i) {
    targets[i] = (i + 1) % seq_ == 0 ? static_cast<int>(mix(data_seed + 1 ^ mix(i)) % vocab_) : tokens[i + 1];
  }
  tokens.pop_back();
  // The embedding's backward, per micro-batch: its token positions grouped by token, in position order.
  std::vector<int> unique_tokens, starts, order;
  for (int k = 0; k < micro_steps_; ++k) {
    std::vector<int> local(T);
    std::iota(local.begin(), local.end(), 0);
    const int* tok = tokens.data() + k * T;
    std::stable_sort(local.begin(), local.end(), [&](int a, int b) { return tok[a] < tok[b]; });
    unique_begin_.push_back(static_cast<int>(unique_tokens.size()));
    for (std::size_t j = 0; j < T; ++j) {
      if (j == 0 || tok[local[j]] != tok[local[j - 1]]) {
        unique_tokens.push_back(tok[local[j]]);
        starts.push_back(static_cast<int>(j));
      }
    }
    starts.push_back(static_cast<int>(T));
    unique_count_.push_back(static_cast<int>(unique_tokens.size()) - unique_begin_.back());
    order.insert(order.end(), local.begin(), local.end());
  }
  tokens_buf_ = ob::DeviceBuffer<int>(all);
  tokens_buf_.upload(tokens);
  targets_ = ob::DeviceBuffer<int>(all);
  targets_.upload(targets);
  unique_tokens_ = ob::DeviceBuffer<int>(unique_tokens.size());
  unique_tokens_.upload(unique_tokens);
  starts_ = ob::DeviceBuffer<int>(starts.size());
  starts_.upload(starts);
  order_ = ob::DeviceBuffer<int>(order.size());
  order_.upload(order);
}

void TransformerModel::reset_weights(cudaStream_t stream) {
  // Matrices U(-a, a) with a = 1 / sqrt(fan-in) (nn.Linear's bound); biases and learned positions small; norms'
  // weights 1 and LayerNorm's bias 0; an untied embedding U(-0.05, 0.05).
  for (int i = 0; i < static_cast<int>(tensors_.size()); ++i) {
    const ParamTensor& t = tensors_[i];
    const std::uint64_t seed = seed_ + 99u + 7919u * static_cast<std::uint64_t>(i);
    const Step& step = steps_[i];
    const std::size_t n = static_cast<std::size_t>(t.elements());
    if (step.part == Part::kFinalNorm || step.part == Part::kNorm1 || step.part == Part::kNorm2) {
      fill_value(weight(i), h_, 1.0f, stream);
      if (!rms_) fill_value(weight(i) + h_, h_, 0.0f, stream);
    } else if (t.gemm) {
      fill_uniform(weight(i), n, seed, 1.0f / std::sqrt(static_cast<float>(t.rows)), stream);
    } else {
      fill_uniform(weight(i), n, seed, step.part == Part::kEmbedTokens ? 0.05f : 0.02f, stream);
    }
  }
}

void TransformerModel::gemm(int m, int n, int k, bool ta, bool tb, const float* a, const float* b, float* c,
                            cudaStream_t stream, float beta) const {
  ob::cublas_gemm(cublas_, tf32_, {m, n, k, ta, tb}, a, b, c, stream, beta);
}

void TransformerModel::linear(int tensor, int bias, const float* x, float* y, cudaStream_t stream, float beta) const {
  const ParamTensor& t = tensors_[tensor];
  const int in = static_cast<int>(t.rows), out = static_cast<int>(t.cols);
  gemm(tokens_, out, in, false, false, x, weight(tensor), y, stream, beta);
  if (bias >= 0) add_bias(y, weight(bias), tokens_, out, stream);
}

void TransformerModel::attention_forward(int block, cudaStream_t stream) {
  const std::size_t b = block;
  const float* q = q_.get() + b * rows(qd_);
  const float* k = k_.get() + b * rows(kvd_);
  const float* v = v_.get() + b * rows(kvd_);
  if (kv_heads_ < heads_) {
    float* k_rep = k_rep_.get() + b * rows(qd_);
    float* v_rep = v_rep_.get() + b * rows(qd_);
    repeat_heads(k, k_rep, tokens_, kv_heads_, heads_ / kv_heads_, d_, stream);
    repeat_heads(v, v_rep, tokens_, kv_heads_, heads_ / kv_heads_, d_, stream);
    k = k_rep, v = v_rep;
  }
  const long long square = static_cast<long long>(seq_) * seq_;
  float* p = p_.get() + b * static_cast<std::size_t>(micro_batch_) * heads_ * square;
  float* attn = attn_.get() + b * rows(qd_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
  for (int n = 0; n < micro_batch_; ++n) {  // per sequence: the heads as one batch of GEMMs
    const std::size_t at = static_cast<std::size_t>(n) * seq_ * qd_;
    float* pn = p + static_cast<std::size_t>(n) * heads_ * square;
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, seq_, d_, false, true, qd_, qd_, seq_}, q + at, k + at, pn,
                            {d_, d_, square, heads_, scale, 0.0f}, stream);
  }
  causal_softmax(p, static_cast<std::size_t>(micro_batch_) * heads_ * seq_, seq_, stream);
  for (int n = 0; n < micro_batch_; ++n) {
    const std::size_t at = static_cast<std::size_t>(n) * seq_ * qd_;
    const float* pn = p + static_cast<std::size_t>(n) * heads_ * square;
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, d_, seq_, false, false, seq_, qd_, qd_}, pn, v + at, attn + at,
                            {square, d_, d_, heads_}, stream);
  }
}

// Forward layer `L - tensor` runs `work` (a tensor of -1: none): the layers come in order 1, 2, ..., L.
void TransformerModel::run_layer(ForwardPass& pass, int tensor, const char* what, const std::function<void()>& work) {
  if (tensor < 0) return;
  const int l = static_cast<int>(tensors_.size()) - tensor;
  if (l != pass.expected++) {
    throw std::logic_error("TransformerModel: forward layer " + std::to_string(l) + " out of order");
  }
  ob::NvtxRange range(std::string("forward ") + what);
  if (pass.before) pass.before(l);
  if (work) work();
  if (pass.after) pass.after(l);
}

void TransformerModel::forward(int micro, cudaStream_t stream, const LayerHook& before, const LayerHook& after) {
  micro_ = micro;
  ForwardPass pass{before, after};
  const std::size_t T = tokens_;
  const int* tokens = tokens_buf_.get() + static_cast<std::size_t>(micro) * T;
  run_layer(pass, embed_tokens_, "embedding",
            [&] { embed_lookup(tokens, weight(embed_tokens_), x_.get(), T, h_, stream); });
  run_layer(pass, embed_positions_, "positions",
            [&] { add_positions(weight(embed_positions_), seq_, shape_.positions, x_.get(), T, h_, stream); });
  for (int b = 0; b < kept_; ++b) forward_block(b, pass, stream);
  const float* last = x_.get() + static_cast<std::size_t>(kept_) * rows(h_);
  const int* targets = targets_.get() + static_cast<std::size_t>(micro) * T;
  const float scale = 1.0f / static_cast<float>(T * micro_steps_);
  auto head_and_loss = [&] {
    if (lm_head_ >= 0) {
      linear(lm_head_, -1, nf_.get(), logits_.get(), stream);
    } else {  // tied: logits = nf · Eᵀ
      gemm(tokens_, vocab_, h_, false, true, nf_.get(), weight(embed_tokens_), logits_.get(), stream);
    }
    CUDA_CHECK(cudaMemsetAsync(loss_.get(), 0, sizeof(double), stream));
    cross_entropy(logits_.get(), targets, T, vocab_, scale, loss_.get(), stream);
  };
  run_layer(pass, final_norm_, "final norm", [&] {
    norm_forward(last, weight(final_norm_), nf_.get(), stats_f_.get(), T, h_, rms_, stream);
    if (lm_head_ < 0) head_and_loss();
  });
  run_layer(pass, lm_head_, "lm head", head_and_loss);
  if (pass.expected != static_cast<int>(tensors_.size()) + 1) {
    throw std::logic_error("TransformerModel: a tensor's forward layer was never run");
  }
}

void TransformerModel::forward_block(int b, ForwardPass& pass, cudaStream_t stream) {
  const BlockTensors& t = blocks_[b];
  const std::size_t at = b, T = tokens_;
  float* x = x_.get() + at * rows(h_);
  float* n1 = n1_.get() + at * rows(h_);
  float* xm = xm_.get() + at * rows(h_);
  float* n2 = n2_.get() + at * rows(h_);
  float* m1 = m1_.get() + at * rows(inter_);
  float* act = act_.get() + at * rows(inter_);
  run_layer(pass, t.norm1, "norm1",
            [&] { norm_forward(x, weight(t.norm1), n1, stats1_.get() + at * rows(2), T, h_, rms_, stream); });
  run_layer(pass, t.q_bias, "q bias", {});
  run_layer(pass, t.q, "q", [&] { linear(t.q, t.q_bias, n1, q_.get() + at * rows(qd_), stream); });
  run_layer(pass, t.k_bias, "k bias", {});
  run_layer(pass, t.k, "k", [&] { linear(t.k, t.k_bias, n1, k_.get() + at * rows(kvd_), stream); });
  run_layer(pass, t.v_bias, "v bias", {});
  run_layer(pass, t.v, "v and attention", [&] {
    linear(t.v, t.v_bias, n1, v_.get() + at * rows(kvd_), stream);
    attention_forward(b, stream);
  });
  run_layer(pass, t.o_bias, "o bias", {});
  run_layer(pass, t.o, "o", [&] {
    CUDA_CHECK(cudaMemcpyAsync(xm, x, rows(h_) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    linear(t.o, t.o_bias, attn_.get() + at * rows(qd_), xm, stream, 1.0f);  // the residual
  });
  run_layer(pass, t.norm2, "norm2",
            [&] { norm_forward(xm, weight(t.norm2), n2, stats2_.get() + at * rows(2), T, h_, rms_, stream); });
  run_layer(pass, t.m1_bias, "mlp bias", {});
  run_layer(pass, t.m1, swiglu_ ? "gate" : "fc", [&] {
    linear(t.m1, t.m1_bias, n2, m1, stream);
    if (!swiglu_) gelu_forward(m1, act, rows(inter_), stream);
  });
  if (swiglu_) {
    float* m2 = m2_.get() + at * rows(inter_);
    run_layer(pass, t.m2_bias, "up bias", {});
    run_layer(pass, t.m2, "up", [&] {
      linear(t.m2, t.m2_bias, n2, m2, stream);
      swiglu_forward(m1, m2, act, rows(inter_), stream);
    });
  }
  run_layer(pass, t.down_bias, "mlp bias", {});
  run_layer(pass, t.down, swiglu_ ? "down" : "proj", [&] {
    float* next = x + rows(h_);
    CUDA_CHECK(cudaMemcpyAsync(next, xm, rows(h_) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    linear(t.down, t.down_bias, act, next, stream, 1.0f);  // the residual
  });
}

double TransformerModel::loss(cudaStream_t stream) const {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return loss_.download()[0] / (static_cast<double>(tokens_) * micro_steps_);
}

}  // namespace phase4
