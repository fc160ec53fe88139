// The transformer's kernels other than its GEMMs (transformer_model.hpp): lookups, norms, activations, the attention
// core's softmax, K/V repeats, the loss, and the reductions of its small gradients. Every one is deterministic (no
// floating-point atomics on a gradient): the same data gives the same bits, so --graph and the strategies' checks hold.
// Matrices are row-major, one row per token.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace phase4 {

// out[t] = table[tokens[t]], rows of h.
void embed_lookup(const int* tokens, const float* table, float* out, std::size_t rows, int h, cudaStream_t stream);
// out[t] += positions[(t % seq) % n_positions]: the learned positions, in their own forward layer (after the lookup's,
// as their backward step comes before the token embedding's), so a sharded strategy gathers them before they are read.
void add_positions(const float* positions, int seq, int n_positions, float* out, std::size_t rows, int h,
                   cudaStream_t stream);
// The lookup's backward, grouped by token (no atomics): for each u < uniques, table row unique_tokens[u] +=
// the sum of dx's rows order[starts[u]] .. order[starts[u + 1] - 1], in that order.
void embed_backward(const int* unique_tokens, const int* starts, const int* order, int uniques, const float* dx,
                    float* dtable, int h, cudaStream_t stream);
// dpositions[p] = beta * dpositions[p] + the sum of dx's rows t with (t % seq) % n_positions == p, in token order.
void positions_backward(const float* dx, float* dpositions, std::size_t rows, int seq, int n_positions, int h,
                        float beta, cudaStream_t stream);

// y = norm(x) per row, with w the norm's tensor (RMSNorm: its weight; LayerNorm: weight then bias); stats gets each
// row's mean and 1/std (RMSNorm: 0 and 1/rms).
void norm_forward(const float* x, const float* w, float* y, float* stats, std::size_t rows, int h, bool rms,
                  cudaStream_t stream);
// dx = residual + (the norm's backward of dy) per row (residual may be null).
void norm_backward(const float* dy, const float* x, const float* w, const float* stats, const float* residual,
                   float* dx, std::size_t rows, int h, bool rms, cudaStream_t stream);
// The norm's own gradient: dw = beta * dw + sum over rows of dy * x̂ (and LayerNorm's bias: + sum of dy).
// `partials` holds column_partials(rows, 2h) floats.
void norm_weight_grad(const float* dy, const float* x, const float* stats, float* dw, std::size_t rows, int h, bool rms,
                      float beta, float* partials, cudaStream_t stream);
// A bias's gradient: out = beta * out + the column sums of dy (rows x cols). `partials`: column_partials(rows, cols).
void column_sums(const float* dy, float* out, std::size_t rows, int cols, float beta, float* partials,
                 cudaStream_t stream);
std::size_t column_partials(std::size_t rows, int cols);
void add_bias(float* y, const float* bias, std::size_t rows, int cols, cudaStream_t stream);
void fill_value(float* x, std::size_t n, float value, cudaStream_t stream);

// SwiGLU: a = silu(g) * u; its backward dg, du. GELU (erf): a = gelu(f); df = da * gelu'(f).
void swiglu_forward(const float* g, const float* u, float* a, std::size_t n, cudaStream_t stream);
void swiglu_backward(const float* da, const float* g, const float* u, float* dg, float* du, std::size_t n,
                     cudaStream_t stream);
void gelu_forward(const float* f, float* a, std::size_t n, cudaStream_t stream);
void gelu_backward(const float* da, const float* f, float* df, std::size_t n, cudaStream_t stream);

// Grouped-query attention: rep (rows x kv_heads * repeats * d) holds each K/V head repeated to its `repeats` query
// heads (head i of rep is head i / repeats of kv); sum_repeats is its backward.
void repeat_heads(const float* kv, float* rep, std::size_t rows, int kv_heads, int repeats, int d, cudaStream_t stream);
void sum_repeats(const float* rep, float* kv, std::size_t rows, int kv_heads, int repeats, int d, cudaStream_t stream);

// The attention probabilities in place: rows of s scores, row r at position r % s seeing positions 0..r % s.
void causal_softmax(float* p, std::size_t rows, int s, cudaStream_t stream);
// The softmax's backward in place: dp = scale * p * (dp - sum(dp * p)) per row.
void softmax_backward(const float* p, float* dp, std::size_t rows, int s, float scale, cudaStream_t stream);
// Cross-entropy against targets: logits replaced by scale * (softmax - one_hot), *loss += the rows' losses.
void cross_entropy(float* logits, const int* targets, std::size_t rows, int vocab, float scale, double* loss,
                   cudaStream_t stream);

}  // namespace phase4
