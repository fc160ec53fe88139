#include <cmath>
#include <string>
#include <utility>

#include "common/cuda/cublas_gemm.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/core/registry.hpp"
#include "phase4_chunked_nccl/model/model.hpp"

namespace phase4 {

using Families = Registry<ModelFactory>;

RegisterModel::RegisterModel(const std::string& family, ModelFactory make) {
  Families::add("model families", family, make);
}

std::vector<std::string> model_families() { return Families::names(); }

std::unique_ptr<Model> make_model(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads,
                                  float* weights) {
  return Families::get("model family", spec.family)(spec, rank, cublas, grads, weights);
}

namespace {
const RegisterModel kMlp(kMlpFamily, made_model<Mlp>);
}  // namespace

Mlp::Mlp(const ModelSpec& spec, int rank, cublasHandle_t cublas, float* grads, float* weights)
    : Model(static_cast<std::size_t>(spec.layers) * spec.hidden * spec.hidden, grads, weights), tf32_(spec.tf32),
      hidden_(spec.hidden), layers_(spec.layers), batch_(spec.batch), micro_steps_(spec.accum_steps), cublas_(cublas),
      weight_seed_(spec.seed) {
  const std::size_t w = elements();
  const std::size_t act = batch_elements(), data = act * micro_steps_;
  inputs_ = ob::DeviceBuffer<float>(data);
  targets_ = ob::DeviceBuffer<float>(data);
  activations_ = ob::DeviceBuffer<float>(layers_ * act);
  dz_ = ob::DeviceBuffer<float>(act);
  da_ = ob::DeviceBuffer<float>(act);
  loss_ = ob::DeviceBuffer<double>(1);
  // Each rank's data differs (seeded by rank); the target is a fixed random matrix. Micro-batch k is element range
  // [k * act, (k + 1) * act) of the seeded sequence: the same numbers as rows [kB, (k+1)B) of a K*B-row batch.
  const std::uint64_t data_seed = spec.seed * 1000003u + 17u * static_cast<std::uint64_t>(rank + 1);
  fill_uniform(inputs_.get(), data, data_seed, 1.0f, nullptr);
  fill_uniform(targets_.get(), data, data_seed + 1, 1.0f, nullptr);
  CUDA_CHECK(cudaMemset(this->grads(), 0, w * sizeof(float)));
  reset_weights(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
}

void Mlp::reset_weights(cudaStream_t stream) {
  // He-style uniform init, U(-a, a) with a = sqrt(6 / H): activations keep their scale through the ReLUs.
  fill_uniform(weights(), elements(), weight_seed_ + 99u, std::sqrt(6.0f / hidden_), stream);
}

void Mlp::forward(int micro, cudaStream_t stream, const LayerHook& before, const LayerHook& after) {
  micro_ = static_cast<std::size_t>(micro);
  const std::size_t act = batch_elements();
  for (int l = 1; l <= layers_; ++l) {
    ob::NvtxRange range("forward layer " + std::to_string(l));
    if (before) before(l);
    ob::cublas_gemm(cublas_, tf32_, {batch_, hidden_, hidden_}, activation(l - 1), slot(weights(), layers_ - l),
                    activation(l), stream);
    if (l < layers_) relu_inplace(activation(l), act, stream);
    if (after) after(l);
  }
  CUDA_CHECK(cudaMemsetAsync(loss_.get(), 0, sizeof(double), stream));
  mse_grad(activation(layers_), targets_.get() + micro_ * act, dz_.get(), loss_.get(), act,
           static_cast<double>(act) * micro_steps_, stream);
}

void Mlp::backward_step(int step, bool accumulate, cudaStream_t stream) {
  const int l = layers_ - step;
  ob::NvtxRange range("backward layer " + std::to_string(l));
  ob::cublas_gemm(cublas_, tf32_, {hidden_, hidden_, batch_, true, false}, activation(l - 1), dz_.get(),
                  slot(grads(), step), stream, accumulate ? 1.0f : 0.0f);
  if (l == 1) return;
  ob::cublas_gemm(cublas_, tf32_, {batch_, hidden_, hidden_, false, true}, dz_.get(), slot(weights(), step), da_.get(),
                  stream);
  relu_backward(da_.get(), activation(l - 1), batch_elements(), stream);
  std::swap(dz_, da_);
}

}  // namespace phase4
