// The MLP of phase 4: L square layers of width H, ReLU between them, MSE against a fixed target, fp32 weights,
// GEMMs through cuBLAS (TF32 by default). With K accumulation micro-steps each rank holds K micro-batches (rows
// [kB, (k+1)B) of one K*B-row batch), and the loss is the mean over all of them. Weights and gradients each live in one contiguous buffer in backward
// order: slot s holds layer L - s, so the gradient buffer fills front to back during the backward pass and a
// bucket (an element range) is ready as soon as the slots it overlaps are written.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"

namespace phase4 {

// What the schedules drive: a model whose spec.layers backward steps each write one range of the gradient buffer
// (ModelSpec::layout(), in backward order), and whose forward runs as spec.layers forward layers, forward layer l
// being the forward work of the tensor that backward step spec.layers - l completes.
class Model {
 public:
  virtual ~Model() = default;
  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  virtual void reset_weights(cudaStream_t stream) = 0;  // the initial weights, identical on every rank
  // The forward of micro-batch `micro` (of --accum-steps K) to the loss's gradient. `before` and `after` (if set)
  // run on the host around each forward layer l (1-based) as it is enqueued: the trainer's all-gathers and timing
  // marks.
  using LayerHook = std::function<void(int layer)>;
  virtual void forward(int micro, cudaStream_t stream, const LayerHook& before = {}, const LayerHook& after = {}) = 0;
  // Backward step s of the last forward's micro-batch: its gradient range written (added to when `accumulate`).
  virtual void backward_step(int step, bool accumulate, cudaStream_t stream) = 0;

  float* weights() const { return weights_; }
  float* grads() const { return grads_; }
  std::size_t elements() const { return elements_; }

 protected:
  // `grads`: the gradient buffer, owned by the gradient-sync strategy that moves it; `weights` the same for the
  // weights (null: the model allocates its own).
  Model(std::size_t elements, float* grads, float* weights)
      : elements_(elements), grads_(grads), own_weights_(weights ? 0 : elements),
        weights_(weights ? weights : own_weights_.get()) {}

 private:
  std::size_t elements_;
  float* grads_;
  ob::DeviceBuffer<float> own_weights_;  // empty when the strategy owns the weights
  float* weights_;
};

// A model family is one file under model/ that registers its factory at start-up (a RegisterModel object), as a
// strategy does (sync/registry.hpp): the MLP below, the transformer (transformer_model.cu). Two families of one name
// stop the program.
using ModelFactory = std::unique_ptr<Model> (*)(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads,
                                                float* weights);
struct RegisterModel {
  RegisterModel(const std::string& family, ModelFactory make);
};
// The factory of a model class constructed from the factory's arguments: RegisterModel k("mine", made_model<Mine>).
template <class M>
std::unique_ptr<Model> made_model(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads,
                                  float* weights) {
  return std::make_unique<M>(spec, rank, cublas, grads, weights);
}
std::vector<std::string> model_families();  // every registered family, by name
// The model `spec` describes, made by its family's factory; throws std::invalid_argument for an unknown family.
std::unique_ptr<Model> make_model(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights);

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
