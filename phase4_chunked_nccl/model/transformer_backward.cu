// TransformerModel's backward (transformer_model.hpp): one step per tensor, in parameter_tensors' order.
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/model/transformer_kernels.cuh"
#include "phase4_chunked_nccl/model/transformer_model.hpp"

namespace phase4 {

void TransformerModel::linear_backward(int tensor, const float* x, const float* dy, float* dx, bool accumulate,
                                       float dx_beta, cudaStream_t stream) {
  const ParamTensor& t = tensors_[tensor];
  const int in = static_cast<int>(t.rows), out = static_cast<int>(t.cols);
  gemm(in, out, tokens_, true, false, x, dy, grad(tensor), stream, accumulate ? 1.0f : 0.0f);
  if (dx) gemm(tokens_, in, out, false, true, dy, weight(tensor), dx, stream, dx_beta);
}

void TransformerModel::attention_backward(int block, cudaStream_t stream) {
  const std::size_t b = block;
  const bool gqa = kv_heads_ < heads_;
  const float* q = q_.get() + b * rows(qd_);
  const float* k = gqa ? k_rep_.get() + b * rows(qd_) : k_.get() + b * rows(kvd_);
  const float* v = gqa ? v_rep_.get() + b * rows(qd_) : v_.get() + b * rows(kvd_);
  float* dk = gqa ? dk_rep_.get() : dk_.get();
  float* dv = gqa ? dv_rep_.get() : dv_.get();
  const long long square = static_cast<long long>(seq_) * seq_;
  const float* p = p_.get() + b * static_cast<std::size_t>(micro_batch_) * heads_ * square;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
  for (int n = 0; n < micro_batch_; ++n) {
    const std::size_t at = static_cast<std::size_t>(n) * seq_ * qd_;
    const float* pn = p + static_cast<std::size_t>(n) * heads_ * square;
    const float* dout = dattn_.get() + at;
    // dV = Pᵀ dO; dP = dO Vᵀ; dS = the softmax's backward (scaled); dQ = dS K; dK = dSᵀ Q.
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, d_, seq_, true, false, seq_, qd_, qd_}, pn, dout, dv + at,
                            {square, d_, d_, heads_}, stream);
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, seq_, d_, false, true, qd_, qd_, seq_}, dout, v + at, dp_.get(),
                            {d_, d_, square, heads_}, stream);
    softmax_backward(pn, dp_.get(), static_cast<std::size_t>(heads_) * seq_, seq_, scale, stream);
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, d_, seq_, false, false, seq_, qd_, qd_}, dp_.get(), k + at,
                            dq_.get() + at, {square, d_, d_, heads_}, stream);
    ob::cublas_gemm_batched(cublas_, tf32_, {seq_, d_, seq_, true, false, seq_, qd_, qd_}, dp_.get(), q + at, dk + at,
                            {square, d_, d_, heads_}, stream);
  }
  if (gqa) {
    sum_repeats(dk_rep_.get(), dk_.get(), tokens_, kv_heads_, heads_ / kv_heads_, d_, stream);
    sum_repeats(dv_rep_.get(), dv_.get(), tokens_, kv_heads_, heads_ / kv_heads_, d_, stream);
  }
}

void TransformerModel::backward_step(int s, bool accumulate, cudaStream_t stream) {
  const Step& step = steps_.at(static_cast<std::size_t>(s));
  ob::NvtxRange range("backward " + tensors_[s].name);
  const float beta = accumulate ? 1.0f : 0.0f;
  const std::size_t T = tokens_;
  switch (step.part) {
    case Part::kLmHead: linear_backward(s, nf_.get(), logits_.get(), dn_.get(), accumulate, 0.0f, stream); return;
    case Part::kFinalNorm: {
      if (lm_head_ < 0) {  // the tied head's GEMMs: dE (+)= dlogitsᵀ · nf, dnf = dlogits · E
        gemm(vocab_, h_, tokens_, true, false, logits_.get(), nf_.get(), grad(embed_tokens_), stream, beta);
        gemm(tokens_, h_, vocab_, false, false, logits_.get(), weight(embed_tokens_), dn_.get(), stream);
      }
      const float* last = x_.get() + static_cast<std::size_t>(kept_) * rows(h_);
      norm_backward(dn_.get(), last, weight(s), stats_f_.get(), nullptr, dx_.get(), T, h_, rms_, stream);
      norm_weight_grad(dn_.get(), last, stats_f_.get(), grad(s), T, h_, rms_, beta, partials_.get(), stream);
      return;
    }
    case Part::kEmbedPositions:
      positions_backward(dx_.get(), grad(s), T, seq_, shape_.positions, h_, beta, stream);
      return;
    case Part::kEmbedTokens: {
      if (lm_head_ >= 0 && !accumulate) {
        CUDA_CHECK(
            cudaMemsetAsync(grad(s), 0, static_cast<std::size_t>(tensors_[s].elements()) * sizeof(float), stream));
      }
      const int first = unique_begin_[micro_];
      embed_backward(unique_tokens_.get() + first, starts_.get() + first + micro_, order_.get() + micro_ * T,
                     unique_count_[micro_], dx_.get(), grad(s), h_, stream);
      return;
    }
    default: backward_block(step, s, accumulate, stream);
  }
}

void TransformerModel::backward_block(const Step& step, int s, bool accumulate, cudaStream_t stream) {
  const BlockTensors& t = blocks_[step.block];
  const std::size_t at = step.block, T = tokens_;
  const float beta = accumulate ? 1.0f : 0.0f;
  const float* x = x_.get() + at * rows(h_);
  const float* n1 = n1_.get() + at * rows(h_);
  const float* xm = xm_.get() + at * rows(h_);
  const float* n2 = n2_.get() + at * rows(h_);
  const float* m1 = m1_.get() + at * rows(inter_);
  auto bias_of = [&](const float* dy, int width) { column_sums(dy, grad(s), T, width, beta, partials_.get(), stream); };
  switch (step.part) {
    case Part::kDown:
    case Part::kProj:
      if (step.bias) return bias_of(dx_.get(), h_);
      return linear_backward(s, act_.get() + at * rows(inter_), dx_.get(), da_.get(), accumulate, 0.0f, stream);
    case Part::kUp:
      if (step.bias) return bias_of(dm2_.get(), inter_);
      swiglu_backward(da_.get(), m1, m2_.get() + at * rows(inter_), dm1_.get(), dm2_.get(), rows(inter_), stream);
      return linear_backward(s, n2, dm2_.get(), dn_.get(), accumulate, 0.0f, stream);
    case Part::kGate:
      if (step.bias) return bias_of(dm1_.get(), inter_);
      return linear_backward(s, n2, dm1_.get(), dn_.get(), accumulate, 1.0f, stream);
    case Part::kFc:
      if (step.bias) return bias_of(dm1_.get(), inter_);
      gelu_backward(da_.get(), m1, dm1_.get(), rows(inter_), stream);
      return linear_backward(s, n2, dm1_.get(), dn_.get(), accumulate, 0.0f, stream);
    case Part::kNorm2:
      norm_backward(dn_.get(), xm, weight(s), stats2_.get() + at * rows(2), dx_.get(), dxm_.get(), T, h_, rms_, stream);
      return norm_weight_grad(dn_.get(), xm, stats2_.get() + at * rows(2), grad(s), T, h_, rms_, beta, partials_.get(),
                              stream);
    case Part::kO:
      if (step.bias) return bias_of(dxm_.get(), h_);
      return linear_backward(s, attn_.get() + at * rows(qd_), dxm_.get(), dattn_.get(), accumulate, 0.0f, stream);
    case Part::kV:
      if (step.bias) return bias_of(dv_.get(), kvd_);
      attention_backward(step.block, stream);
      return linear_backward(s, n1, dv_.get(), dn_.get(), accumulate, 0.0f, stream);
    case Part::kK:
      if (step.bias) return bias_of(dk_.get(), kvd_);
      return linear_backward(s, n1, dk_.get(), dn_.get(), accumulate, 1.0f, stream);
    case Part::kQ:
      if (step.bias) return bias_of(dq_.get(), qd_);
      return linear_backward(s, n1, dq_.get(), dn_.get(), accumulate, 1.0f, stream);
    case Part::kNorm1:
      norm_backward(dn_.get(), x, weight(s), stats1_.get() + at * rows(2), dxm_.get(), dx_.get(), T, h_, rms_, stream);
      return norm_weight_grad(dn_.get(), x, stats1_.get() + at * rows(2), grad(s), T, h_, rms_, beta, partials_.get(),
                              stream);
    default: throw std::logic_error("TransformerModel: step " + tensors_[s].name + " is not a block's");
  }
}

}  // namespace phase4
