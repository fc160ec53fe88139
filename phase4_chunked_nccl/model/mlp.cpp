// The MLP family ("mlp", the default): --layers square layers of width --hidden on --batch rows per rank (its model:
// model/mlp.hpp). Its row is known to a build without CUDA; its model is built with CUDA only.
#include <string>

#include "phase4_chunked_nccl/core/families.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include <cmath>
#include <utility>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/nvtx.hpp"
#include "phase4_chunked_nccl/model/kernels.cuh"
#include "phase4_chunked_nccl/model/mlp.hpp"
#endif

namespace phase4 {
namespace {

FamilyRow mlp_row() {
  FamilyRow row;
  row.name = kDefaultFamily;
  row.help = "phase 4's MLP: --layers square layers of width --hidden, ReLU between them, on --batch rows per rank";
  row.options = {"--hidden", "--layers", "--batch"};
  row.fit_option = "--batch";
  row.layout = [](const ModelSpec& spec) { return GradientLayout::equal(spec.layers, spec.hidden); };
  row.activation_floats = [](const ModelSpec& spec) {  // A_1..A_L, every micro-batch's inputs and targets, dZ, dA
    const double act = 1.0 * spec.batch * spec.hidden;
    return spec.layers * act + 2.0 * spec.accum_steps * act + 2.0 * act;
  };
  row.describe = [](const ModelSpec& spec) {
    return "MLP H=" + std::to_string(spec.hidden) + " L=" + std::to_string(spec.layers) +
        " B=" + std::to_string(spec.batch) + " per rank";
  };
  row.square_layers = true;
#if defined(OVERLAP_HAVE_CUDA)
  row.make = made_model<Mlp>;
#endif
  return row;
}
const RegisterFamily kMlp(mlp_row());

}  // namespace

#if defined(OVERLAP_HAVE_CUDA)
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

#endif

}  // namespace phase4
