// Where a rank computes its gradient: on the CPU (OpenMP, phase 1's CPU GEMM), on a GPU (phase 1's kernels), or
// nowhere (--compute busy: a busy loop as long as the chunk's all-reduce, as OSU's osu_iallreduce sizes it).
// A step is forward (y = x·W, dY = 2 (y - t) / N over the global batch), then dW = xᵀ·dY chunk by chunk (row block
// k of dW), each chunk ending in the buffer MPI all-reduces, then the SGD update from that buffer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

// This rank's data, identical to the matching rows of one global data set drawn from the seed.
struct ShardData {
  Range rows;  // rows of the global batch this rank holds (may be empty)
  std::vector<float> x;  // rows.size() x in
  std::vector<float> xt;  // in x rows.size(): xᵀ, so a chunk of dW = xᵀ·dY reads a contiguous row block
  std::vector<float> w0;  // in x out: initial weights, identical on every rank
  std::vector<float> w_star;  // in x out: the target's weights, t = x·W*
};

ShardData make_shard(const Config& config, Range rows);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string description() const = 0;
  virtual void forward() = 0;
  // Chunk k is dW rows `rows`. launch_chunk starts it: the GPU queues the GEMM and the copy to the host and returns,
  // the CPU computes it before returning. wait_chunk returns once chunk k is in the communication buffer, calling
  // `idle` (when given) while it waits: the GPU again and again, the busy loop --probes times, the CPU GEMM never.
  virtual void launch_chunk(int k, Range rows) = 0;
  virtual void wait_chunk(int k, const std::function<void()>& idle) = 0;
  // The busy loop: the chunks of a step follow one another on the clock, chunk k due when chunk k - 1 was due plus
  // its target, however late the thread came back to it. The progress strategy asks for it: its hand-off to the
  // progress thread is a store and a wake-up, and the core the progress thread then takes is, as in osu_iallreduce's
  // one loop, time the wall-clock compute does not notice. Real compute has no such clock.
  virtual void run_back_to_back(bool /*on*/) {}
  // True when launch_chunk only queues work: a strategy then launches every chunk before waiting for the first.
  virtual bool queues_chunks() const { return false; }
  // Chunk k, all-reduced, back where the update reads it (the GPU with host staging: a copy on its own stream).
  virtual void return_chunk(int /*k*/, Range /*rows*/) {}
  // The in x out gradient MPI all-reduces: host memory, or device memory with --cuda-aware.
  virtual float* comm_buffer() = 0;
  virtual void write_comm(const std::vector<float>& values) = 0;
  virtual std::vector<float> read_comm() = 0;
  virtual void update() = 0;  // W -= lr * (all-reduced gradient), once every returned chunk has landed
  // False for the busy loop, which computes nothing: every mode then all-reduces the exact pattern and checks it.
  virtual bool trains() const { return true; }
  // The comm-only run's per-chunk medians (slowest rank), for a backend that sizes its compute from them.
  virtual void size_to_comm(const std::vector<double>& /*chunk_comm_ms*/) {}
  virtual std::vector<float> weights() = 0;
  virtual void set_weights(const std::vector<float>& w) = 0;
};

std::unique_ptr<Backend> make_cpu_backend(const Config& config, const ShardData& data);
// Only in CUDA builds; `device` is this rank's GPU.
std::unique_ptr<Backend> make_gpu_backend(const Config& config, const ShardData& data, int device);
// --compute busy: each chunk a busy loop to a wall-clock target (OSU's dummy compute); gradients in host memory.
std::unique_ptr<Backend> make_busy_backend(const Config& config);

}  // namespace phase3
