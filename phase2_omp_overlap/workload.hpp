// The two workloads a phase 2 pipeline runs, chunk by chunk:
//  - Synthetic: each task waits for a set duration (the original course project's method), which isolates the
//    scheduling from contention: sleeps need no core.
//  - Real: compute is an fp32 GEMM of one row block of the gradient, its rows shared by a persistent compute team (the
//    pipeline's threads, started once per iteration: a nested team per chunk cost 0.5 ms a chunk on a 16-core host,
//    more than the chunk's GEMM); communication is an all-reduce
//    among `virtual_ranks` gradient copies held in memory (sum every copy, write the sum back to every copy), done by
//    one thread. Inputs are small integers, so every result is exact and is checked element by element.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/verify.hpp"
#include "phase2_omp_overlap/config.hpp"

namespace phase2 {

class Workload {
 public:
  virtual ~Workload() = default;
  // Runs share `part` of `parts` of chunk `chunk`'s compute task of iteration `iter` (iterations are numbered from 0
  // for each mode's run); the shares of one chunk together are its whole task. Called by every thread of the compute
  // team at once.
  virtual void compute(int iter, int chunk, int part, int parts) = 0;
  // The compute team's size this workload wants (the synthetic workload's waits need one thread).
  virtual int team() const { return 1; }
  virtual void communicate(int iter, int chunk) = 0;
  // Puts the buffers in the state a communication-only iteration starts from (untimed).
  virtual void prepare_comm_only() {}
  // Checks the buffers after an iteration of `mode`; wrong == 0 for the synthetic workload.
  virtual ob::ExactCheck check(const std::string& mode) const { return {}; }
};

class SyntheticWorkload : public Workload {
 public:
  explicit SyntheticWorkload(const Config& config);
  void compute(int iter, int chunk, int part, int parts) override;
  void communicate(int iter, int chunk) override;
  // The duration (ms) a task waits: nominal * (1 + jitter * u), u in [-1, 1] from (seed, kind, iter, chunk).
  double duration_ms(int kind, int iter, int chunk) const;

 private:
  double compute_ms_, comm_ms_, jitter_;
  std::uint64_t seed_;
};

class RealWorkload : public Workload {
 public:
  explicit RealWorkload(const Config& config);
  void compute(int iter, int chunk, int part, int parts) override;
  int team() const override { return threads_; }
  void communicate(int iter, int chunk) override;
  void prepare_comm_only() override;
  ob::ExactCheck check(const std::string& mode) const override;

  // Exposed for tests: copy v of the gradient, and the exact product the GEMM must give.
  std::vector<float>& copy(int v) { return copies_[v]; }
  const std::vector<float>& reference() const { return reference_; }

 private:
  int chunks_, rows_, hidden_, ranks_, threads_;
  std::vector<float> a_, b_;  // A: (chunks * rows) x hidden, B: hidden x hidden
  std::vector<float> reference_;  // A * B, computed once exactly
  std::vector<std::vector<float>> copies_;  // one gradient per virtual rank
};

std::unique_ptr<Workload> make_workload(const Config& config);

}  // namespace phase2
