// The GPU backend: phase 1's kernels on a compute stream. Each chunk's GEMM reads a row block of xᵀ (kept
// transposed on the device, so the block is contiguous). With host staging the chunk then goes to pinned host memory
// on a download stream as soon as its GEMM is done (the next chunk's GEMM runs meanwhile), and comes back after its
// all-reduce on an upload stream (the copy engines of both directions work beside the SMs); with --cuda-aware it
// stays on the device.
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/cuda/handles.hpp"
#include "phase1_cuda_baseline/elementwise.cuh"
#include "phase1_cuda_baseline/gemm.cuh"
#include "phase3_mpi_cuda/backend.hpp"

namespace phase3 {
namespace {

class GpuBackend : public Backend {
 public:
  GpuBackend(const Config& config, const ShardData& data, int device)
      : in_(config.in), out_(config.out), rows_(data.rows.size()), lr_(config.lr), cuda_aware_(config.cuda_aware),
        kernel_(phase1::parse_gemm_kernel(config.kernel)), device_(device) {
    CUDA_CHECK(cudaSetDevice(device));
    stream_ = ob::make_stream();
    down_ = ob::make_stream();
    up_ = ob::make_stream();
    ob::name_stream(stream_, "phase3 compute");
    ob::name_stream(down_, "phase3 download");
    ob::name_stream(up_, "phase3 upload");
    returned_ = ob::make_sync_event();
    for (int k = 0; k < config.chunks; ++k) {
      computed_.push_back(ob::make_sync_event());
      in_buffer_.push_back(ob::make_sync_event());
    }
    cublas_ = ob::make_cublas();
    const std::size_t xs = static_cast<std::size_t>(rows_) * in_, ws = static_cast<std::size_t>(in_) * out_,
                      ys = static_cast<std::size_t>(rows_) * out_;
    x_ = ob::DeviceBuffer<float>(xs);
    xt_ = ob::DeviceBuffer<float>(xs);
    w_ = ob::DeviceBuffer<float>(ws);
    grad_ = ob::DeviceBuffer<float>(ws);
    t_ = ob::DeviceBuffer<float>(ys);
    y_ = ob::DeviceBuffer<float>(ys);
    dy_ = ob::DeviceBuffer<float>(ys);
    loss_ = ob::DeviceBuffer<double>(1);
    host_grad_ = ob::make_pinned<float>(ws);
    w_.upload(data.w0);
    if (rows_ > 0) {
      x_.upload(data.x);
      xt_.upload(data.xt);
      ob::DeviceBuffer<float> w_star(ws);
      w_star.upload(data.w_star);
      phase1::gemm(phase1::GemmKernel::kCublas, cublas_, false, {rows_, out_, in_}, x_.get(), w_star.get(), t_.get(),
                   stream_);
      CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    global_elements_ = static_cast<std::size_t>(config.batch) * config.out;
  }

  std::string description() const override {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device_);
    return std::string("gpu ") + std::to_string(device_) + " (" + prop.name + ", " + phase1::gemm_kernel_name(kernel_) +
        (cuda_aware_ ? ", CUDA-aware MPI)" : ", host staging)");
  }

  void forward() override {
    bind();
    if (rows_ == 0) return;
    phase1::gemm(kernel_, cublas_, false, {rows_, out_, in_}, x_.get(), w_.get(), y_.get(), stream_);
    CUDA_CHECK(cudaMemsetAsync(loss_.get(), 0, sizeof(double), stream_));
    // The gradient of the mean over the global batch: dY = 2 (y - t) / (global batch * out).
    phase1::mse_loss_grad(y_.get(), t_.get(), dy_.get(), loss_.get(), static_cast<std::size_t>(rows_) * out_, stream_,
                          global_elements_);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void launch_chunk(int k, Range rows) override {
    bind();
    float* dst = grad_.get() + static_cast<std::size_t>(rows.begin) * out_;
    const std::size_t bytes = static_cast<std::size_t>(rows.size()) * out_ * sizeof(float);
    if (rows_ == 0) {
      CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
    } else if (rows.size() > 0) {
      phase1::gemm(kernel_, cublas_, false, {rows.size(), out_, rows_},
                   xt_.get() + static_cast<std::size_t>(rows.begin) * rows_, dy_.get(), dst, stream_);
    }
    CUDA_CHECK(cudaEventRecord(computed_[k], stream_));
    if (cuda_aware_) {
      CUDA_CHECK(cudaEventRecord(in_buffer_[k], stream_));
      return;
    }
    CUDA_CHECK(cudaStreamWaitEvent(down_, computed_[k], 0));
    if (bytes > 0) {
      CUDA_CHECK(cudaMemcpyAsync(host_grad_.get() + static_cast<std::size_t>(rows.begin) * out_, dst, bytes,
                                 cudaMemcpyDeviceToHost, down_));
    }
    CUDA_CHECK(cudaEventRecord(in_buffer_[k], down_));
  }

  void wait_chunk(int k, const std::function<void()>& idle) override {
    bind();
    if (!idle) {
      CUDA_CHECK(cudaEventSynchronize(in_buffer_[k]));
      return;
    }
    while (true) {
      const cudaError_t state = cudaEventQuery(in_buffer_[k]);
      if (state != cudaErrorNotReady) {
        CUDA_CHECK(state);
        return;
      }
      idle();
    }
  }

  bool queues_chunks() const override { return true; }

  void return_chunk(int, Range rows) override {
    if (cuda_aware_ || rows.size() == 0) return;
    bind();
    const std::size_t offset = static_cast<std::size_t>(rows.begin) * out_;
    CUDA_CHECK(cudaMemcpyAsync(grad_.get() + offset, host_grad_.get() + offset,
                               static_cast<std::size_t>(rows.size()) * out_ * sizeof(float), cudaMemcpyHostToDevice,
                               up_));
  }

  float* comm_buffer() override { return cuda_aware_ ? grad_.get() : host_grad_.get(); }

  void write_comm(const std::vector<float>& values) override {
    bind();
    CUDA_CHECK(cudaMemcpy(comm_buffer(), values.data(), values.size() * sizeof(float), cudaMemcpyDefault));
  }
  std::vector<float> read_comm() override {
    bind();
    std::vector<float> values(static_cast<std::size_t>(in_) * out_);
    CUDA_CHECK(cudaMemcpy(values.data(), comm_buffer(), values.size() * sizeof(float), cudaMemcpyDefault));
    return values;
  }

  void update() override {
    bind();
    CUDA_CHECK(cudaEventRecord(returned_, up_));  // every returned chunk has landed before the update reads it
    CUDA_CHECK(cudaStreamWaitEvent(stream_, returned_, 0));
    phase1::sgd_update(w_.get(), grad_.get(), lr_, grad_.size(), stream_);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::vector<float> weights() override {
    bind();
    return w_.download();
  }
  void set_weights(const std::vector<float>& w) override {
    bind();
    w_.upload(w);
  }

 private:
  // The current device is per host thread, and the thread strategy computes on an OpenMP worker: every entry
  // point selects this rank's GPU first.
  void bind() const { CUDA_CHECK(cudaSetDevice(device_)); }

  int in_, out_, rows_;
  float lr_;
  bool cuda_aware_;
  phase1::GemmKernel kernel_;
  int device_;
  std::size_t global_elements_ = 1;
  ob::CudaStream stream_, down_, up_;
  std::vector<ob::CudaEvent> computed_, in_buffer_;  // per chunk: its GEMM done; it is in the buffer MPI reads
  ob::CudaEvent returned_;
  ob::CublasHandle cublas_;
  ob::DeviceBuffer<float> x_, xt_, w_, grad_, t_, y_, dy_;
  ob::DeviceBuffer<double> loss_;
  ob::PinnedArray<float> host_grad_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const Config& config, const ShardData& data, int device) {
  return std::make_unique<GpuBackend>(config, data, device);
}

}  // namespace phase3
