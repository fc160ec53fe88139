#include <cmath>
#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "phase4_chunked_nccl/model/block_reduce.cuh"
#include "phase4_chunked_nccl/model/launch.cuh"
#include "phase4_chunked_nccl/model/transformer_kernels.cuh"

namespace phase4 {
namespace {

constexpr int kRowChunk = 64;  // rows a column reduction's partial sum covers
constexpr float kNormEpsilon = 1e-5f;  // nn.LayerNorm's default, and torch_transformer.RMSNorm's

__global__ void embed_lookup_kernel(const int* tokens, const float* table, float* out, std::size_t rows, int h) {
  GRID_STRIDE(i, rows * h) out[i] = table[static_cast<std::size_t>(tokens[i / h]) * h + i % h];
}

__global__ void add_positions_kernel(const float* positions, int seq, int n_positions, float* out, std::size_t rows,
                                     int h) {
  GRID_STRIDE(i, rows * h) {
    const std::size_t t = i / h, c = i % h;
    out[i] += positions[static_cast<std::size_t>((t % seq) % n_positions) * h + c];
  }
}

__global__ void embed_backward_kernel(const int* unique_tokens, const int* starts, const int* order, const float* dx,
                                      float* dtable, int h) {
  const int u = blockIdx.x;
  float* row = dtable + static_cast<std::size_t>(unique_tokens[u]) * h;
  for (int c = threadIdx.x; c < h; c += blockDim.x) {
    float acc = 0;
    for (int j = starts[u]; j < starts[u + 1]; ++j) acc += dx[static_cast<std::size_t>(order[j]) * h + c];
    row[c] += acc;
  }
}

__global__ void positions_backward_kernel(const float* dx, float* dpositions, std::size_t rows, int seq,
                                          int n_positions, int h, float beta) {
  const int p = blockIdx.x;
  for (int c = threadIdx.x; c < h; c += blockDim.x) {
    float acc = 0;
    for (std::size_t base = 0; base < rows; base += seq) {
      for (std::size_t j = p; j < static_cast<std::size_t>(seq) && base + j < rows; j += n_positions) {
        acc += dx[(base + j) * h + c];
      }
    }
    float& out = dpositions[static_cast<std::size_t>(p) * h + c];
    out = beta == 0.0f ? acc : beta * out + acc;
  }
}

__global__ void norm_forward_kernel(const float* x, const float* w, float* y, float* stats, int h, bool rms) {
  __shared__ float shared[32];
  const std::size_t r = blockIdx.x;
  const float* xr = x + r * h;
  float sum = 0;
  for (int c = threadIdx.x; c < h; c += blockDim.x) sum += rms ? 0.0f : xr[c];
  const float mean = rms ? 0.0f : block_sum(sum, shared) / h;
  float squares = 0;
  for (int c = threadIdx.x; c < h; c += blockDim.x) squares += (xr[c] - mean) * (xr[c] - mean);
  const float inv = rsqrtf(block_sum(squares, shared) / h + kNormEpsilon);
  for (int c = threadIdx.x; c < h; c += blockDim.x) {
    const float v = (xr[c] - mean) * inv * w[c];
    y[r * h + c] = rms ? v : v + w[h + c];
  }
  if (threadIdx.x == 0) stats[2 * r] = mean, stats[2 * r + 1] = inv;
}

__global__ void norm_backward_kernel(const float* dy, const float* x, const float* w, const float* stats,
                                     const float* residual, float* dx, int h, bool rms) {
  __shared__ float shared[32];
  const std::size_t r = blockIdx.x;
  const float mean = stats[2 * r], inv = stats[2 * r + 1];
  float g_sum = 0, gx_sum = 0;
  for (int c = threadIdx.x; c < h; c += blockDim.x) {
    const float g = dy[r * h + c] * w[c], xhat = (x[r * h + c] - mean) * inv;
    g_sum += g;
    gx_sum += g * xhat;
  }
  const float g_mean = rms ? 0.0f : block_sum(g_sum, shared) / h;
  const float gx_mean = block_sum(gx_sum, shared) / h;
  for (int c = threadIdx.x; c < h; c += blockDim.x) {
    const float g = dy[r * h + c] * w[c], xhat = (x[r * h + c] - mean) * inv;
    const float d = inv * (g - g_mean - xhat * gx_mean);
    dx[r * h + c] = residual ? residual[r * h + c] + d : d;
  }
}

// Column c's partial sum over rows [k * kRowChunk, (k + 1) * kRowChunk): of dy * x̂ for c < h, of dy (column c - h)
// for c >= h (LayerNorm's bias); with `stats` null, of dy alone (a bias).
__global__ void column_partials_kernel(const float* dy, const float* x, const float* stats, std::size_t rows, int h,
                                       int width, float* partials) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  const std::size_t k = blockIdx.y, end = min(rows, (k + 1) * kRowChunk);
  float acc = 0;
  for (std::size_t r = k * kRowChunk; r < end; ++r) {
    if (!stats) {
      acc += dy[r * width + c];
    } else if (c < h) {
      acc += dy[r * h + c] * (x[r * h + c] - stats[2 * r]) * stats[2 * r + 1];
    } else {
      acc += dy[r * h + c - h];
    }
  }
  partials[k * width + c] = acc;
}

__global__ void finish_columns_kernel(const float* partials, int chunks, int width, float* out, float beta) {
  GRID_STRIDE(c, static_cast<std::size_t>(width)) {
    float acc = 0;
    for (int k = 0; k < chunks; ++k) acc += partials[static_cast<std::size_t>(k) * width + c];  // in chunk order
    out[c] = beta == 0.0f ? acc : beta * out[c] + acc;
  }
}

void reduce_columns(const float* dy, const float* x, const float* stats, std::size_t rows, int h, int width, float* out,
                    float beta, float* partials, cudaStream_t s) {
  const int chunks = static_cast<int>((rows + kRowChunk - 1) / kRowChunk);
  const dim3 grid((width + kThreads - 1) / kThreads, chunks);
  column_partials_kernel<<<grid, kThreads, 0, s>>>(dy, x, stats, rows, h, width, partials);
  CUDA_CHECK_LAUNCH();
  finish_columns_kernel<<<blocks_for(width), kThreads, 0, s>>>(partials, chunks, width, out, beta);
  CUDA_CHECK_LAUNCH();
}

__global__ void add_bias_kernel(float* y, const float* bias, std::size_t rows, int cols) {
  GRID_STRIDE(i, rows * cols) y[i] += bias[i % cols];
}

__global__ void fill_value_kernel(float* x, std::size_t n, float value) { GRID_STRIDE(i, n) x[i] = value; }

__device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + __expf(-g)); }

__global__ void swiglu_forward_kernel(const float* g, const float* u, float* a, std::size_t n) {
  GRID_STRIDE(i, n) a[i] = g[i] * sigmoid(g[i]) * u[i];
}

__global__ void swiglu_backward_kernel(const float* da, const float* g, const float* u, float* dg, float* du,
                                       std::size_t n) {
  GRID_STRIDE(i, n) {
    const float sig = sigmoid(g[i]), silu = g[i] * sig;
    dg[i] = da[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
    du[i] = da[i] * silu;
  }
}

__global__ void gelu_forward_kernel(const float* f, float* a, std::size_t n) {
  GRID_STRIDE(i, n) a[i] = 0.5f * f[i] * (1.0f + erff(f[i] * 0.70710678f));
}

__global__ void gelu_backward_kernel(const float* da, const float* f, float* df, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float x = f[i];
    df[i] = da[i] * (0.5f * (1.0f + erff(x * 0.70710678f)) + x * 0.39894228f * __expf(-0.5f * x * x));
  }
}

__global__ void repeat_heads_kernel(const float* kv, float* rep, std::size_t rows, int kv_heads, int repeats, int d) {
  const std::size_t width = static_cast<std::size_t>(kv_heads) * repeats * d;
  GRID_STRIDE(i, rows * width) {
    const std::size_t t = i / width, rest = i % width, head = rest / d, j = rest % d;
    rep[i] = kv[t * kv_heads * d + (head / repeats) * d + j];
  }
}

__global__ void sum_repeats_kernel(const float* rep, float* kv, std::size_t rows, int kv_heads, int repeats, int d) {
  const std::size_t width = static_cast<std::size_t>(kv_heads) * d;
  GRID_STRIDE(i, rows * width) {
    const std::size_t t = i / width, g = (i % width) / d, j = i % d;
    const float* from = rep + t * width * repeats + g * repeats * d + j;
    float acc = 0;
    for (int r = 0; r < repeats; ++r) acc += from[static_cast<std::size_t>(r) * d];
    kv[i] = acc;
  }
}

__global__ void cross_entropy_kernel(float* logits, const int* targets, int vocab, float scale, double* loss) {
  __shared__ float shared[32];
  const std::size_t r = blockIdx.x;
  float* row = logits + r * vocab;
  float top = -INFINITY;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x) top = fmaxf(top, row[c]);
  top = block_max(top, shared);
  float sum = 0;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x) sum += __expf(row[c] - top);
  const float log_sum = top + logf(block_sum(sum, shared));
  const int target = targets[r];
  const float target_logit = row[target];
  __syncthreads();  // every thread has read the target's logit before it is overwritten
  for (int c = threadIdx.x; c < vocab; c += blockDim.x) {
    row[c] = scale * (__expf(row[c] - log_sum) - (c == target ? 1.0f : 0.0f));
  }
  if (threadIdx.x == 0) atomicAdd(loss, static_cast<double>(log_sum - target_logit));
}

}  // namespace

void embed_lookup(const int* tokens, const float* table, float* out, std::size_t rows, int h, cudaStream_t s) {
  embed_lookup_kernel<<<blocks_for(rows * h), kThreads, 0, s>>>(tokens, table, out, rows, h);
  CUDA_CHECK_LAUNCH();
}

void add_positions(const float* positions, int seq, int n_positions, float* out, std::size_t rows, int h,
                   cudaStream_t s) {
  add_positions_kernel<<<blocks_for(rows * h), kThreads, 0, s>>>(positions, seq, n_positions, out, rows, h);
  CUDA_CHECK_LAUNCH();
}

void embed_backward(const int* unique_tokens, const int* starts, const int* order, int uniques, const float* dx,
                    float* dtable, int h, cudaStream_t s) {
  if (uniques == 0) return;
  embed_backward_kernel<<<uniques, kThreads, 0, s>>>(unique_tokens, starts, order, dx, dtable, h);
  CUDA_CHECK_LAUNCH();
}

void positions_backward(const float* dx, float* dpositions, std::size_t rows, int seq, int n_positions, int h,
                        float beta, cudaStream_t s) {
  positions_backward_kernel<<<n_positions, kThreads, 0, s>>>(dx, dpositions, rows, seq, n_positions, h, beta);
  CUDA_CHECK_LAUNCH();
}

void norm_forward(const float* x, const float* w, float* y, float* stats, std::size_t rows, int h, bool rms,
                  cudaStream_t s) {
  norm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, y, stats, h, rms);
  CUDA_CHECK_LAUNCH();
}

void norm_backward(const float* dy, const float* x, const float* w, const float* stats, const float* residual,
                   float* dx, std::size_t rows, int h, bool rms, cudaStream_t s) {
  norm_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(dy, x, w, stats, residual, dx, h, rms);
  CUDA_CHECK_LAUNCH();
}

std::size_t column_partials(std::size_t rows, int cols) {
  return (rows + kRowChunk - 1) / kRowChunk * static_cast<std::size_t>(cols);
}

void norm_weight_grad(const float* dy, const float* x, const float* stats, float* dw, std::size_t rows, int h, bool rms,
                      float beta, float* partials, cudaStream_t s) {
  reduce_columns(dy, x, stats, rows, h, rms ? h : 2 * h, dw, beta, partials, s);
}

void column_sums(const float* dy, float* out, std::size_t rows, int cols, float beta, float* partials, cudaStream_t s) {
  reduce_columns(dy, nullptr, nullptr, rows, cols, cols, out, beta, partials, s);
}

void add_bias(float* y, const float* bias, std::size_t rows, int cols, cudaStream_t s) {
  add_bias_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(y, bias, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void fill_value(float* x, std::size_t n, float value, cudaStream_t s) {
  fill_value_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, value);
  CUDA_CHECK_LAUNCH();
}

void swiglu_forward(const float* g, const float* u, float* a, std::size_t n, cudaStream_t s) {
  swiglu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(g, u, a, n);
  CUDA_CHECK_LAUNCH();
}

void swiglu_backward(const float* da, const float* g, const float* u, float* dg, float* du, std::size_t n,
                     cudaStream_t s) {
  swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(da, g, u, dg, du, n);
  CUDA_CHECK_LAUNCH();
}

void gelu_forward(const float* f, float* a, std::size_t n, cudaStream_t s) {
  gelu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(f, a, n);
  CUDA_CHECK_LAUNCH();
}

void gelu_backward(const float* da, const float* f, float* df, std::size_t n, cudaStream_t s) {
  gelu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(da, f, df, n);
  CUDA_CHECK_LAUNCH();
}

void repeat_heads(const float* kv, float* rep, std::size_t rows, int kv_heads, int repeats, int d, cudaStream_t s) {
  const std::size_t n = rows * kv_heads * repeats * d;
  repeat_heads_kernel<<<blocks_for(n), kThreads, 0, s>>>(kv, rep, rows, kv_heads, repeats, d);
  CUDA_CHECK_LAUNCH();
}

void sum_repeats(const float* rep, float* kv, std::size_t rows, int kv_heads, int repeats, int d, cudaStream_t s) {
  sum_repeats_kernel<<<blocks_for(rows * kv_heads * d), kThreads, 0, s>>>(rep, kv, rows, kv_heads, repeats, d);
  CUDA_CHECK_LAUNCH();
}

void cross_entropy(float* logits, const int* targets, std::size_t rows, int vocab, float scale, double* loss,
                   cudaStream_t s) {
  cross_entropy_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(logits, targets, vocab, scale, loss);
  CUDA_CHECK_LAUNCH();
}

}  // namespace phase4
