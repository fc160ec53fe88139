// The MLP of phase 4: L square layers of width H, ReLU between them, MSE against a fixed target, fp32 weights,
// GEMMs through cuBLAS (TF32 by default). Weights and gradients each live in one contiguous buffer in backward
// order: slot s holds layer L - s, so the gradient buffer fills front to back during the backward pass and a
// bucket (an element range) is ready as soon as the slots it overlaps are written.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/config.hpp"

namespace phase4 {

class Mlp {
 public:
  Mlp(const Config& config, int rank, cublasHandle_t cublas);

  void reset_weights(cudaStream_t stream);  // the initial weights, identical on every rank
  // A_l = ReLU(A_{l-1} · W_l) (no ReLU on the last layer), then dZ = 2 (A_L - T) / (batch * hidden).
  void forward(cudaStream_t stream);
  // Backward step s (layer l = L - s): dW_l = A_{l-1}ᵀ · dZ into gradient slot s, then (l > 1) the next dZ =
  // (dZ · W_lᵀ) masked by A_{l-1} > 0.
  void backward_step(int step, cudaStream_t stream);
  void update(float scale, cudaStream_t stream);  // W -= scale · G

  float* weights() const { return weights_.get(); }
  float* grads() const { return grads_.get(); }
  std::size_t elements() const { return weights_.size(); }

 private:
  float* activation(int l) const { return activations_.get() + static_cast<std::size_t>(l) * batch_ * hidden_; }
  float* slot(const ob::DeviceBuffer<float>& buffer, int step) const {
    return buffer.get() + static_cast<std::size_t>(step) * hidden_ * hidden_;
  }

  const Config& config_;
  int hidden_, layers_, batch_;
  cublasHandle_t cublas_;
  ob::DeviceBuffer<float> weights_, grads_, activations_, target_, dz_, da_;
  ob::DeviceBuffer<double> loss_;
  std::uint64_t weight_seed_;
};

}  // namespace phase4
