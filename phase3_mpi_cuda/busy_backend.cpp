// --compute busy: OSU's dummy compute. Each chunk "computes" by spinning on the clock until a wall-clock target (the
// chunk's measured pure all-reduce time, as osu_iallreduce sizes it, or --busy-us), calling `idle` (MPI_Test in the nonblocking
// strategy) --probes times at evenly spaced points, as osu_iallreduce's -t does. Whatever the probes or a progress
// thread take of the core, the chunk ends at its target: a busy loop cannot be slowed, real compute can.
#include <algorithm>
#include <chrono>

#include "common/timer.hpp"
#include "phase3_mpi_cuda/backend.hpp"

namespace phase3 {
namespace {

void spin_until(ob::SteadyClock::time_point t) {
  while (ob::SteadyClock::now() < t) {}
}

class BusyBackend : public Backend {
 public:
  explicit BusyBackend(const Config& config)
      : probes_(config.probes), fixed_ms_(config.busy_us / 1000), target_ms_(config.chunks, fixed_ms_),
        grad_(static_cast<std::size_t>(config.in) * config.out) {}

  std::string description() const override {
    return "busy loop (wall clock, " + std::to_string(probes_) + " MPI_Test probes per chunk)";
  }
  void forward() override { chained_ = false; }
  void run_back_to_back(bool on) override { back_to_back_ = on; }
  void launch_chunk(int, Range) override { start_ = back_to_back_ && chained_ ? end_ : ob::SteadyClock::now(); }
  void wait_chunk(int k, const std::function<void()>& idle) override {
    const std::chrono::duration<double, std::milli> target(target_ms_.at(k));
    const auto end = end_ = start_ + std::chrono::duration_cast<ob::SteadyClock::duration>(target);
    chained_ = true;
    for (int p = 1; p <= probes_ && idle; ++p) {
      spin_until(start_ + std::chrono::duration_cast<ob::SteadyClock::duration>(target * p / (probes_ + 1)));
      idle();
    }
    spin_until(end);
  }
  float* comm_buffer() override { return grad_.data(); }
  void write_comm(const std::vector<float>& values) override { grad_ = values; }
  std::vector<float> read_comm() override { return grad_; }
  void update() override {}
  void size_to_comm(const std::vector<double>& chunk_comm_ms) override {
    if (fixed_ms_ == 0) target_ms_ = chunk_comm_ms;  // OSU's sizing: as long as the communication alone
  }
  bool trains() const override { return false; }
  std::vector<float> weights() override { return {}; }
  void set_weights(const std::vector<float>&) override {}

 private:
  int probes_;
  double fixed_ms_;  // --busy-us; 0: sized from the comm-only run
  std::vector<double> target_ms_;
  std::vector<float> grad_;
  ob::SteadyClock::time_point start_, end_;
  bool back_to_back_ = false, chained_ = false;  // chained_: a chunk of this step has run
};

}  // namespace

std::unique_ptr<Backend> make_busy_backend(const Config& config) { return std::make_unique<BusyBackend>(config); }

}  // namespace phase3
