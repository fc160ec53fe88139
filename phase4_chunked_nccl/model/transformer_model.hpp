// Phase 4's transformer (--model; METRICS.md, "Transformer shapes"): a decoder-only transformer of a
// TransformerShape's first --blocks blocks, trained in fp32 with cross-entropy on given next tokens, the same work
// overlap_bench/ddp/torch_transformer.py runs in PyTorch. Each block: norm1; Q, K, V (K and V repeated to the query heads
// under grouped-query attention); the attention core as batched GEMMs (Q Kᵀ / sqrt(d), causal softmax, P V) per sequence;
// O and a residual; norm2; the MLP (gate, up, down with SiLU; or fc, proj with GELU) and a residual. Outside: the
// token embedding (and learned positions), the final norm, the LM head (the embedding when tied).
//
// Its backward steps are its tensors in parameter_tensors' order, each writing its range of the gradient buffer:
// a matrix's step runs its dW and dX GEMMs; a bias's and a norm's step reduce their gradient; the attention core's
// backward runs in the V projection's step; a tied LM head's GEMMs run in the first step (the final norm's), its
// embedding's lookups in the last. Forward layer l is the forward work of the tensor of backward step L - l (a bias
// has none: its matrix adds it).
#pragma once

#include <cublas_v2.h>

#include <functional>
#include <string>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/model/model.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"

namespace phase4 {

class TransformerModel : public Model {
 public:
  TransformerModel(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights);

  void reset_weights(cudaStream_t stream) override;
  void forward(int micro, cudaStream_t stream, const LayerHook& before = {}, const LayerHook& after = {}) override;
  void backward_step(int step, bool accumulate, cudaStream_t stream) override;

  // The last forward's loss: its tokens' cross-entropy summed over the K x tokens of a step, after `stream`'s work.
  double loss(cudaStream_t stream) const;

  enum class Part {
    kLmHead,
    kFinalNorm,
    kEmbedPositions,
    kEmbedTokens,
    kNorm1,
    kQ,
    kK,
    kV,
    kO,
    kNorm2,
    kGate,
    kUp,
    kDown,
    kFc,
    kProj
  };

 private:
  struct Step {
    Part part;
    int block = -1;  // -1 outside the blocks
    bool bias = false;  // the matrix's bias, not the matrix
  };
  // Per block, the backward step (tensor index) of each of its tensors (-1: absent).
  struct BlockTensors {
    int norm1 = -1, q = -1, k = -1, v = -1, o = -1, norm2 = -1, m1 = -1, m2 = -1, down = -1;  // m1: gate or fc; m2: up
    int q_bias = -1, k_bias = -1, v_bias = -1, o_bias = -1, m1_bias = -1, m2_bias = -1, down_bias = -1;
  };

  // One forward pass's hooks and the next forward layer it expects.
  struct ForwardPass {
    const LayerHook& before;
    const LayerHook& after;
    int expected = 1;
  };

  void index_tensors();  // steps_, blocks_ and the tensors outside the blocks, from tensors_
  void allocate();  // the activations and the backward's work buffers
  void make_tokens(int rank);  // this rank's tokens and targets, and their grouping for the embedding's backward
  void run_layer(ForwardPass& pass, int tensor, const char* what, const std::function<void()>& work);
  void forward_block(int block, ForwardPass& pass, cudaStream_t stream);
  float* weight(int tensor) const { return weights() + layout_.begin(tensor); }
  float* grad(int tensor) const { return grads() + layout_.begin(tensor); }
  std::size_t rows(std::size_t width) const { return static_cast<std::size_t>(tokens_) * width; }
  void gemm(int m, int n, int k, bool ta, bool tb, const float* a, const float* b, float* c, cudaStream_t stream,
            float beta = 0.0f) const;
  // y = x · W (+ bias) for the matrix `tensor` (rows x cols: in x out); beta 1 adds to y.
  void linear(int tensor, int bias, const float* x, float* y, cudaStream_t stream, float beta = 0.0f) const;
  // The matrix's dW (into its gradient range) and, with dx non-null, dx (+)= dy · Wᵀ.
  void linear_backward(int tensor, const float* x, const float* dy, float* dx, bool accumulate, float dx_beta,
                       cudaStream_t stream);
  void attention_forward(int block, cudaStream_t stream);
  void attention_backward(int block, cudaStream_t stream);
  void backward_block(const Step& step, int tensor, bool accumulate, cudaStream_t stream);

  TransformerShape shape_;
  std::vector<ParamTensor> tensors_;
  GradientLayout layout_;
  std::vector<Step> steps_;
  std::vector<BlockTensors> blocks_;
  int lm_head_ = -1, final_norm_ = -1, embed_positions_ = -1, embed_tokens_ = -1;
  cublasHandle_t cublas_;
  bool tf32_, rms_, swiglu_;
  int seq_, micro_batch_, micro_steps_, tokens_, h_, qd_, kvd_, inter_, heads_, kv_heads_, d_, vocab_, kept_;
  int micro_ = 0;
  std::uint64_t seed_;
  // Per micro-batch: the tokens, the targets, and for the embedding's backward the tokens grouped (embed_backward).
  ob::DeviceBuffer<int> tokens_buf_, targets_, unique_tokens_, starts_, order_;
  std::vector<int> unique_begin_, unique_count_;  // per micro-batch: its range of unique_tokens_ and starts_
  // Activations kept for the backward (per block where the name says so).
  ob::DeviceBuffer<float> x_, n1_, stats1_, q_, k_, v_, k_rep_, v_rep_, p_, attn_, xm_, n2_, stats2_, m1_, m2_, act_;
  ob::DeviceBuffer<float> nf_, stats_f_, logits_;
  // The backward's work buffers (one block at a time).
  ob::DeviceBuffer<float> dx_, dxm_, dn_, dattn_, dq_, dk_, dv_, dk_rep_, dv_rep_, dp_, da_, dm1_, dm2_, partials_;
  ob::DeviceBuffer<double> loss_;
};

}  // namespace phase4
