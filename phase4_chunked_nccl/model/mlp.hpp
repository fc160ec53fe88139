// The MLP of phase 4 (its family's row: model/mlp.cpp): L square layers of width H, ReLU between them, MSE against
// a fixed target, fp32 weights, GEMMs through cuBLAS (TF32 by default). With K accumulation micro-steps each rank
// holds K micro-batches (rows [kB, (k+1)B) of one K*B-row batch), and the loss is the mean over all of them. Gradient
// slot s holds layer L - s.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/model/model.hpp"

namespace phase4 {

class Mlp : public Model {
 public:
  Mlp(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights);

  void reset_weights(cudaStream_t stream) override;
  // On micro-batch `micro`: A_l = ReLU(A_{l-1} · W_l) (no ReLU on the last layer), then
  // dZ = 2 (A_L - T) / (K * batch * hidden).
  void forward(int micro, cudaStream_t stream, const LayerHook& before = {}, const LayerHook& after = {}) override;
  // Backward step s (layer l = L - s) of the last forward's micro-batch: dW_l = A_{l-1}ᵀ · dZ into gradient slot s
  // (added to it when `accumulate`), then (l > 1) the next dZ = (dZ · W_lᵀ) masked by A_{l-1} > 0.
  void backward_step(int step, bool accumulate, cudaStream_t stream) override;

 private:
  std::size_t batch_elements() const { return static_cast<std::size_t>(batch_) * hidden_; }
  // A_0 is the current micro-batch's input; A_1..A_L are kept for the backward pass.
  float* activation(int l) const {
    return l == 0 ? inputs_.get() + micro_ * batch_elements() : activations_.get() + (l - 1) * batch_elements();
  }
  float* slot(float* buffer, int step) const { return buffer + static_cast<std::size_t>(step) * hidden_ * hidden_; }

  bool tf32_;
  int hidden_, layers_, batch_, micro_steps_;
  std::size_t micro_ = 0;
  cublasHandle_t cublas_;
  ob::DeviceBuffer<float> inputs_, targets_, activations_, dz_, da_;
  ob::DeviceBuffer<double> loss_;
  std::uint64_t weight_seed_;
};

}  // namespace phase4
