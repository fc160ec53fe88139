// Phase 4's trainer: the model, the strategy (sync/, chosen by --sync), the schedule its row names (schedule/), the
// compute and comm streams, cuBLAS. It runs a mode's steps through the common iteration protocol
// (common/iteration.hpp), timed with CUDA events at each step's start and end, and turns the marks the schedule made
// on further steps marked in detail (the breakdown) into per-part times and the timeline. With --accum-steps K the
// first K - 1 micro-steps (forward and backward) only accumulate gradients; the last one is timed and overlapped. With
// --graph each mode's step is captured once as a CUDA graph (both streams, NCCL calls and timing events included) and
// replayed every iteration.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "common/cuda/handles.hpp"
#include "common/cuda/power_monitor.hpp"
#include "common/iteration.hpp"
#include "common/modes.hpp"
#include "common/timeline.hpp"
#include "common/timer.hpp"
#include "phase4_chunked_nccl/core/bucket_plan.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"
#include "phase4_chunked_nccl/sync/gradient_sync.hpp"
#include "phase4_chunked_nccl/model/model.hpp"
#include "phase4_chunked_nccl/schedule/schedule.hpp"

namespace phase4 {

struct ModeRun {
  ob::Mode mode = ob::Mode::kSeq;
  std::vector<double> iter_ms;  // this rank, per timed iteration (marked at its ends only)
  std::vector<double> marked_ms;  // this rank, per step of the breakdown (marked in detail), which the per-part
      // times, the enqueue times and the timeline come from (Trainer::run)
  std::vector<double> forward_ms, update_ms;  // per iteration (forward: from the step's start, so with K > 1
      // it holds the K - 1 accumulation micro-steps too)
  std::vector<double> backward_total_ms;  // per iteration: sum of the backward steps' compute-stream times
  std::vector<std::vector<double>> step_ms;  // [backward step][iteration]
  std::vector<std::vector<double>> bucket_ms;  // [bucket][iteration]
  std::vector<std::vector<double>> layer_ms;  // [forward layer][iteration]: each layer's forward, compute stream
  // The schedule's own parts (its row's), by name: [forward layer][iteration], in the modes that run their stream's
  // work (a compute part in seq, overlap and compute; a comm part in seq, overlap and comm); absent where unmarked.
  std::map<std::string, std::vector<std::vector<double>>> part_ms;
  std::vector<double> enqueue_ms;  // per iteration: host time inside the strategy's communicate()
      // calls (eager runs only; empty with --graph)
  std::vector<double> enqueue_span_ms;  // per iteration: host time from the first such call's start to the
      // last one's end (likewise)
  std::vector<ob::TimelineEvent> events;
  bool ranks_agree = true;  // --check: weight fingerprints equal on every rank after each step
  std::uint64_t wrong = 0;  // comm --check: elements off the exact pattern sum
  std::string first_wrong;
  double energy_j = 0;  // --power: this GPU's energy over the timed iterations (NaN: none,
      // or they lasted less than kShortestEnergyWindowS)
  double timed_s = 0;  // host time of the timed iterations (the barriers between included)
};

// Appends a later run of the same mode and plan to `into` (--passes): its iterations after into's (timeline events
// renumbered after them), its energy and time added, the checks' outcomes joined (the first failure kept).
void append_run(ModeRun& into, ModeRun&& more);

// `run` with its parts (forward, layers, backward steps, update, buckets, the schedule's own) scaled by its timed steps' median
// over its breakdown steps' (this rank's; METRICS.md, "Breakdown"): where the parts follow one another on one stream
// (the compute-only and comm-only modes) they then sum to the timed step. The bound and the planner's calibration take
// their absolute times so; a ratio of one part between modes (a slowdown, a stretch) takes both unscaled, their marks
// alike.
ModeRun at_timed_pace(ModeRun run);
// " (pass 2 of 3)" with several passes, else "".
std::string pass_label(int pass, int passes);

// The interference map at one message size (--interference; METRICS.md, "The interference map"): a backward GEMM of
// the model's shape (dW = aᵀ·dz, hidden x hidden x batch) in a loop on the compute stream, the strategy's collective
// of one bucket in a loop on the comm stream, each alone, then both at once twice: the GEMM loop inside a
// collective loop three times as long (the GEMM's slowdown), and the other way round (the collective's stretch).
// Both loops of a pass start at one GPU instant (gpu_sleep). Times are per operation, one value per pass.
struct Interference {
  std::uint64_t elements = 0;  // the collective's elements (its bucket as the strategy runs it)
  std::vector<double> gemm_ms, comm_ms;  // alone
  std::vector<double> gemm_overlap_ms, comm_overlap_ms;  // inside the other loop
  bool covered = true;  // every loop meant to run inside the other did end first
};

// Timed iterations shorter than this in all get no energy figure: the energy counter's steps would dominate it.
constexpr double kShortestEnergyWindowS = 0.5;

struct Replay;  // a captured step (--graph)
struct StepTimes;  // a step's marks as times (step_times.hpp)

// A mode's timed steps are marked at their start and end only (an event inside a step costs it microseconds:
// results/1xH200/marks-cost); its parts are timed on this many further steps marked in detail (fewer where --iters
// is fewer), after one untimed such step: the breakdown (METRICS.md, "Breakdown").
constexpr int kBreakdownSteps = 5;

class Trainer {
 public:
  // `power` (may be null) gives the energy of each mode's timed iterations.
  Trainer(const StepSpec& spec, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm,
          const ob::PowerMonitor* power = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // `plan` as this trainer's strategy runs it (gradient_sync.hpp, adapt()).
  BucketPlan adapt(const BucketPlan& plan) const { return sync_->adapt(plan); }

  // Warm-up, the timed iterations, then the breakdown (kBreakdownSteps). `steps` > 0: that many untimed steps (for
  // checks) instead. `eager`: no CUDA graph even with --graph (the reference of the graph check). Timeline times
  // count from `origin` (host clock, aligned to the mode's first timed GPU event).
  ModeRun run(ob::Mode mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin, int steps = 0,
              bool eager = false);
  // The timed iterations and minimum time of the runs that follow (a pass's share of them: --passes).
  void set_timing(int iters, double min_time_ms) {
    spec_.iters = iters;
    spec_.min_time_ms = min_time_ms;
  }
  int iters() const { return spec_.iters; }
  double min_time_ms() const { return spec_.min_time_ms; }

  // The comm-only run of strategy `sync` on the same plan (bound_ref's isolated communication).
  ModeRun run_comm_with(const std::string& sync, const BucketPlan& plan, ob::SteadyClock::time_point origin);

  // The relative error (norm) of one step's synchronised gradient against the same gradient all-reduced by a plain
  // fp32 ncclAllReduce. Leaves the weights one compute step further (reset them afterwards).
  double comm_gradient_error(const BucketPlan& plan);

  // The interference map's passes at a message of `elements` (at most the gradient's), each loop `window_ms` long
  // alone (the covering loop 3 times as long).
  Interference interference(std::uint64_t elements, double window_ms, int passes);

  // The synchronised gradient's bytes on the wire, for the bandwidth columns.
  double wire_bytes() const { return wire_bytes(model_->elements()); }
  double wire_bytes(std::uint64_t elements) const { return sync_->wire_bytes(elements); }
  // This schedule's lower bound from measured parts (its row's).
  double bound(const MeasuredParts& parts) const { return schedule_row_->bound(parts, spec_.sync); }

  ncclComm_t comm() const { return nccl_; }
  void reset_weights();
  std::vector<float> download_weights();
  std::uint64_t weight_fingerprint();

 private:
  StepResources resources();
  void check_step(ob::Mode mode, int iter, ModeRun& run);
  cudaStream_t first_stream(ob::Mode mode) const;  // the stream a step of `mode` starts on
  std::unique_ptr<Replay> capture(ob::Mode mode, const BucketPlan& plan, bool detail);
  void step_hooks(ob::Mode mode, const BucketPlan& plan, const Replay* replay, bool detail, ob::EventLog& log,
                  ob::SteadyClock::time_point origin, const double& origin_ms, std::vector<StepTimes>& times,
                  ob::LoopHooks& hooks);

  StepSpec spec_;
  const ScheduleRow* schedule_row_;  // its schedule's (another strategy's in run_comm_with)
  int rank_, ranks_;
  ncclComm_t nccl_;
  MPI_Comm comm_;
  const ob::PowerMonitor* power_;
  // Declared in the order they are made; destroyed in reverse (the model and the strategy's buffers first).
  ob::CudaStream compute_, comm_stream_;
  ob::CudaEvent handoff_, comm_done_;
  ob::CublasHandle cublas_;
  ob::DeviceBuffer<char> cublas_workspace_;
  ob::DeviceBuffer<unsigned long long> scratch_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Schedule> schedule_;
};

// Every mode's run, the modes in turn `passes` times (METRICS.md, "Passes"): pass k times its share of the trainer's
// iterations and minimum time after its own warm-up, from the initial weights (announce(mode, k) first, may be
// empty); a mode's passes joined in order. The trainer's timing is the whole again afterwards.
std::vector<ModeRun> run_passes(Trainer& trainer, const BucketPlan& plan, const std::vector<ob::Mode>& modes,
                                int passes, bool check, ob::SteadyClock::time_point origin,
                                const std::function<void(ob::Mode, int)>& announce = {});

}  // namespace phase4
