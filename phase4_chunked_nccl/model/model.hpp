// The MLP of phase 4: L square layers of width H, ReLU between them, MSE against a fixed target, fp32 weights,
// GEMMs through cuBLAS (TF32 by default). With K accumulation micro-steps each rank holds K micro-batches (rows
// [kB, (k+1)B) of one K*B-row batch), and the loss is the mean over all of them. Weights and gradients each live in one contiguous buffer in backward
// order: slot s holds layer L - s, so the gradient buffer fills front to back during the backward pass and a
// bucket (an element range) is ready as soon as the slots it overlaps are written.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>

#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"

namespace phase4 {

class Mlp {
 public:
  // `grads`: the gradient buffer (layers * hidden^2 floats), owned by the gradient-sync strategy that moves it;
  // `weights` the same for the weights (null: the model allocates its own).
  Mlp(const Config& config, int rank, cublasHandle_t cublas, float* grads, float* weights);

  void reset_weights(cudaStream_t stream);  // the initial weights, identical on every rank
  // On micro-batch `micro`: A_l = ReLU(A_{l-1} · W_l) (no ReLU on the last layer), then
  // dZ = 2 (A_L - T) / (K * batch * hidden). `before` and `after` (if set) run on the host around each layer l
  // (1-based) as it is enqueued: the trainer's all-gathers and timing marks.
  using LayerHook = std::function<void(int layer)>;
  void forward(int micro, cudaStream_t stream, const LayerHook& before = {}, const LayerHook& after = {});
  // Backward step s (layer l = L - s) of the last forward's micro-batch: dW_l = A_{l-1}ᵀ · dZ into gradient slot s
  // (added to it when `accumulate`), then (l > 1) the next dZ = (dZ · W_lᵀ) masked by A_{l-1} > 0.
  void backward_step(int step, bool accumulate, cudaStream_t stream);

  float* weights() const { return weights_; }
  float* grads() const { return grads_; }
  std::size_t elements() const { return elements_; }

 private:
  std::size_t batch_elements() const { return static_cast<std::size_t>(batch_) * hidden_; }
  // A_0 is the current micro-batch's input; A_1..A_L are kept for the backward pass.
  float* activation(int l) const {
    return l == 0 ? inputs_.get() + micro_ * batch_elements() : activations_.get() + (l - 1) * batch_elements();
  }
  float* slot(float* buffer, int step) const { return buffer + static_cast<std::size_t>(step) * hidden_ * hidden_; }

  const Config& config_;
  int hidden_, layers_, batch_, micro_steps_;
  std::size_t micro_ = 0;
  cublasHandle_t cublas_;
  std::size_t elements_;
  float* grads_;
  ob::DeviceBuffer<float> own_weights_;  // empty when the strategy owns the weights
  float* weights_;
  ob::DeviceBuffer<float> inputs_, targets_, activations_, dz_, da_;
  ob::DeviceBuffer<double> loss_;
  std::uint64_t weight_seed_;
};

}  // namespace phase4
