// What phase 4's schedules drive: a model, made by its family's factory (core/families.hpp). Weights and gradients
// each live in one contiguous buffer in backward order, so the gradient buffer fills front to back during the
// backward pass and a bucket (an element range) is ready as soon as the steps it overlaps are written.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

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

// A model family is one file under model/ with its row (core/families.hpp), whose factory makes its model: the
// factory of a model class constructed from the factory's arguments is made_model<Mine>.
template <class M>
std::unique_ptr<Model> made_model(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads,
                                  float* weights) {
  return std::make_unique<M>(spec, rank, cublas, grads, weights);
}
// The model `spec` describes, made by its family's factory; throws std::invalid_argument for an unknown family or
// one with no factory in this build.
inline std::unique_ptr<Model> make_model(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads,
                                         float* weights) {
  const FamilyRow& row = spec.family_row();
  if (!row.make) throw std::invalid_argument("model family '" + spec.family + "' has no model in this build");
  return row.make(spec, rank, cublas, grads, weights);
}

}  // namespace phase4
