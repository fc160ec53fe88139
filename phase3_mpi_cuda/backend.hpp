// Where a rank computes its gradient: on the CPU (OpenMP, phase 1's CPU GEMM) or on a GPU (phase 1's kernels).
// A step is forward (y = x·W, dY = 2 (y - t) / N over the global batch), then dW = xᵀ·dY chunk by chunk (row block
// k of dW), each chunk ending in the buffer MPI all-reduces, then the SGD update from that buffer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

// This rank's data, identical to the matching rows of one global data set drawn from the seed.
struct ShardData {
  Range rows;                 // rows of the global batch this rank holds (may be empty)
  std::vector<float> x;       // rows.size() x in
  std::vector<float> xt;      // in x rows.size(): xᵀ, so a chunk of dW = xᵀ·dY reads a contiguous row block
  std::vector<float> w0;      // in x out: initial weights, identical on every rank
  std::vector<float> w_star;  // in x out: the target's weights, t = x·W*
};

ShardData make_shard(const Config& config, Range rows);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string description() const = 0;
  virtual void forward() = 0;
  // Starts dW rows `rows`; chunk_ready() polls; finish_chunk() completes it into the communication buffer.
  virtual void launch_chunk(Range rows) = 0;
  virtual bool chunk_ready() = 0;
  virtual void finish_chunk(Range rows) = 0;
  void compute_chunk(Range rows) {
    launch_chunk(rows);
    finish_chunk(rows);
  }
  // The in x out gradient MPI all-reduces: host memory, or device memory with --cuda-aware.
  virtual float* comm_buffer() = 0;
  virtual void write_comm(const std::vector<float>& values) = 0;
  virtual std::vector<float> read_comm() = 0;
  virtual void update() = 0;  // W -= lr * (all-reduced gradient)
  virtual std::vector<float> weights() = 0;
  virtual void set_weights(const std::vector<float>& w) = 0;
};

std::unique_ptr<Backend> make_cpu_backend(const Config& config, const ShardData& data);
// Only in CUDA builds; `device` is this rank's GPU.
std::unique_ptr<Backend> make_gpu_backend(const Config& config, const ShardData& data, int device);

}  // namespace phase3
