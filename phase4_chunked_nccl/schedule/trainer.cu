#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/iteration.hpp"
#include "common/mpi_check.hpp"
#include "common/nvtx.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/schedule/checks.cuh"
#include "phase4_chunked_nccl/schedule/step_times.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

namespace phase4 {
namespace {

// One captured step, instantiated; destroyed with the run that made it.
class CapturedStep {
 public:
  CapturedStep() = default;
  ~CapturedStep() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;
  void capture(cudaStream_t origin, const std::function<void()>& body) {
    CUDA_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    body();
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(origin, &graph));
    const cudaError_t status = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    CUDA_CHECK(status);
  }
  void launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;

}  // namespace

// A captured step and the marks its replays record.
struct Replay {
  ob::EventLog log;
  StepMarks marks;
  CapturedStep step;
};

Trainer::Trainer(const StepSpec& spec, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm,
                 const ob::PowerMonitor* power)
    : spec_(spec), schedule_row_(&schedule_of(spec.sync.strategy)), rank_(rank), ranks_(ranks), nccl_(nccl),
      comm_(comm), power_(power), scratch_(2) {
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  compute_ = ob::make_stream();
  comm_stream_ = ob::make_stream(spec.comm_priority == StreamPriority::kHigh ? greatest : least);
  ob::name_stream(compute_, "phase4 compute");
  ob::name_stream(comm_stream_, "phase4 comm");
  handoff_ = ob::make_sync_event();
  comm_done_ = ob::make_sync_event();
  cublas_ = ob::make_cublas();
  // One workspace of our own on the compute stream, eager and captured alike: the same GEMM algorithms (and so the
  // same bits) in both, and no allocation inside a capture.
  cublas_workspace_ = ob::DeviceBuffer<char>(kCublasWorkspaceBytes);
  CUBLAS_CHECK(cublasSetStream(cublas_, compute_));
  CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.bytes()));
  if (spec.gemm_sm_margin > 0) {  // the runner checked that the margin leaves SMs to compute on
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUBLAS_CHECK(cublasSetSmCountTarget(cublas_, sms - spec.gemm_sm_margin));
  }
  sync_ = make_sync(spec.sync.strategy, {spec.sync, rank, ranks, nccl, spec.model.layout()});
  model_ = make_model(spec.model, rank, cublas_, sync_->gradient(), sync_->weights());
  schedule_ = make_schedule(schedule_row_->name, resources(), *sync_);
}

StepResources Trainer::resources() {
  // The update averages the summed gradient over the ranks.
  return {spec_, *model_, compute_, comm_stream_, handoff_, comm_done_, spec_.lr / static_cast<float>(ranks_)};
}

Trainer::~Trainer() = default;

void Trainer::reset_weights() {
  schedule_->reset();
  model_->reset_weights(compute_);
  CUDA_CHECK(cudaStreamSynchronize(compute_));
}

std::vector<float> Trainer::download_weights() {
  schedule_->settle();
  std::vector<float> w(model_->elements());
  CUDA_CHECK(cudaMemcpy(w.data(), model_->weights(), w.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return w;
}

std::uint64_t Trainer::weight_fingerprint() {
  schedule_->settle();
  CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, sizeof(unsigned long long), compute_));
  fingerprint(model_->weights(), model_->elements(), scratch_.get(), compute_);
  unsigned long long value = 0;
  CUDA_CHECK(cudaMemcpyAsync(&value, scratch_.get(), sizeof value, cudaMemcpyDeviceToHost, compute_));
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  return value;
}

double Trainer::comm_gradient_error(const BucketPlan& plan) {
  StepMarks none(nullptr, spec_.model.layers, plan, schedule_row_->parts);
  schedule_->run(ob::Mode::kCompute, plan, none);  // leaves this rank's gradient, and the strategy's wire copy of it
  const std::size_t n = model_->elements();
  ob::DeviceBuffer<float> reference(n);
  CUDA_CHECK(cudaMemcpyAsync(reference.get(), model_->grads(), n * sizeof(float), cudaMemcpyDeviceToDevice, compute_));
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  NCCL_CHECK(ncclAllReduce(reference.get(), reference.get(), n, ncclFloat, ncclSum, nccl_, comm_stream_));
  for (const auto& bucket : plan.buckets) sync_->synchronise(bucket, comm_stream_);
  const float* got = sync_->reduced(comm_stream_);
  ob::DeviceBuffer<double> norms(2);
  CUDA_CHECK(cudaMemsetAsync(norms.get(), 0, norms.bytes(), comm_stream_));
  diff_norms(got, reference.get(), n, norms.get(), comm_stream_);
  CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
  const auto sums = norms.download();
  return sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : std::nan("");
}

ModeRun Trainer::run_comm_with(const std::string& sync, const BucketPlan& plan, ob::SteadyClock::time_point origin) {
  SyncSpec its_spec = spec_.sync;
  its_spec.strategy = sync;
  std::unique_ptr<GradientSync> other = make_sync(sync, {its_spec, rank_, ranks_, nccl_, spec_.model.layout()});
  const ScheduleRow* its_row = &schedule_of(sync);
  std::unique_ptr<Schedule> its = make_schedule(its_row->name, resources(), *other);
  std::swap(sync_, other);
  std::swap(schedule_, its);
  std::swap(schedule_row_, its_row);
  struct Restore {  // the trainer's own strategy and schedule come back, also when the run throws
    Trainer& trainer;
    std::unique_ptr<GradientSync>& sync;
    std::unique_ptr<Schedule>& schedule;
    const ScheduleRow*& row;
    ~Restore() {
      std::swap(trainer.sync_, sync);
      std::swap(trainer.schedule_, schedule);
      std::swap(trainer.schedule_row_, row);
    }
  } restore{*this, other, its, its_row};
  return run(ob::Mode::kComm, plan, false, origin);
}

cudaStream_t Trainer::first_stream(ob::Mode mode) const {
  return mode == ob::Mode::kComm ? comm_stream_.get() : compute_.get();
}

// --graph: one step of `mode` captured (connections opened first, outside it), its marks (in `detail` or its ends
// only) recorded by every replay.
std::unique_ptr<Replay> Trainer::capture(ob::Mode mode, const BucketPlan& plan, bool detail) {
  auto replay = std::make_unique<Replay>();
  replay->marks = StepMarks(&replay->log, spec_.model.layers, plan, schedule_row_->parts, detail);
  replay->log.reserve(4 + 8 * spec_.model.layers + 2 * plan.buckets.size());
  if (mode != ob::Mode::kCompute) {
    for (const auto& bucket : plan.buckets) sync_->synchronise(bucket, comm_stream_);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  schedule_->before_capture(mode, plan);
  CUDA_CHECK(cudaDeviceSynchronize());
  replay->step.capture(first_stream(mode), [&] { schedule_->run(mode, plan, replay->marks); });
  return replay;
}

// The loop's step and clock: each step replayed (`replay`) or enqueued, marked into `log` from its first timed step
// on (in `detail`, or its ends only), each timed one's times from the origin (log's first event) kept in `times` and
// its duration the loop's sample.
void Trainer::step_hooks(ob::Mode mode, const BucketPlan& plan, const Replay* replay, bool detail, ob::EventLog& log,
                         ob::SteadyClock::time_point origin, const double& origin_ms, std::vector<StepTimes>& times,
                         ob::LoopHooks& hooks) {
  auto marks = std::make_shared<StepMarks>();
  cudaStream_t stream = first_stream(mode);
  hooks.step = [=, &plan, &log](const ob::Iteration& it) {
    *marks = StepMarks(it.timed && !replay ? &log : nullptr, spec_.model.layers, plan, schedule_row_->parts, detail);
    ob::NvtxRange range(std::string(ob::mode_name(mode)) + (detail ? " marked" : ""));
    if (replay) {
      replay->step.launch(stream);
    } else {
      schedule_->run(mode, plan, *marks);
    }
  };
  hooks.elapsed_ms = [=, &log, &origin_ms, &times](const ob::Iteration& it) {  // CUDA events: first to last mark
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!it.timed) return 0.0;
    if (replay) {
      times.push_back(
          resolve(replay->marks, [&](int i) { return ob::ms_between(log.event(0), replay->log.event(i)); }));
    } else {
      times.push_back(eager_times(*marks, log, origin, origin_ms));
    }
    return times.back().end - times.back().start;
  };
}

ModeRun Trainer::run(ob::Mode mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin, int steps,
                     bool eager) {
  double origin_ms = 0, energy_start = 0;
  ob::SteadyClock::time_point timed_start;
  ModeRun run;
  run.mode = mode;
  const int layers = spec_.model.layers;
  run.step_ms.assign(layers, {});
  run.bucket_ms.assign(plan.buckets.size(), {});
  run.layer_ms.assign(layers, {});
  const bool timing = steps <= 0, graph = spec_.graph && !eager, comm_only = mode == ob::Mode::kComm;
  const std::size_t n = model_->elements();

  ob::EventLog log;  // the origin; eager, then the marks of the timed steps and of the breakdown's
  const std::unique_ptr<Replay> replay = graph ? capture(mode, plan, false) : nullptr;
  const auto refill = [&](const ob::Iteration&) {
    if (comm_only) {  // the pattern (and the strategy's wire copy): the comm mode times the communication alone
      fill_rank_pattern(sync_->gradient(), n, spec_.model.seed, rank_, comm_stream_);
      for (const auto& bucket : plan.buckets) sync_->bucket_ready(bucket, comm_stream_);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  };
  std::vector<StepTimes> timed;
  ob::LoopHooks hooks;
  step_hooks(mode, plan, replay.get(), false, log, origin, origin_ms, timed, hooks);
  hooks.prepare = [&](const ob::Iteration& it) {
    refill(it);
    if (it.timed && log.size() == 0) {  // the origin of this mode's timeline
      log.record(compute_);
      origin_ms = ob::micros_since(origin, ob::SteadyClock::now()) / 1000.0;
      energy_start = power_ ? power_->energy_j() : std::nan("");
      timed_start = ob::SteadyClock::now();
    }
  };
  // Comm-only steps are checked each (their pattern is refilled before each anyway); the weights once, after the
  // last step (ranks that differ once differ from then on): checked between timed steps, the GPU would idle between
  // them where the compute-only run does not, and the sharded schedule's deferred update would be settled outside
  // the step that owns it.
  hooks.check = [&](const ob::Iteration& it) {
    if (check && (comm_only || it.last)) check_step(mode, it.iter, run);
  };
  run.iter_ms = ob::run_iterations({mode, spec_.warmup, spec_.iters, steps, comm_, spec_.min_time_ms}, hooks);
  if (!timing) return run;
  run.timed_s = ob::micros_since(timed_start, ob::SteadyClock::now()) / 1e6;
  // NVML's energy counter advances in steps (tens of ms on an H100): shorter windows would read 0.
  const bool long_enough = run.timed_s >= kShortestEnergyWindowS;
  run.energy_j = power_ && long_enough ? power_->energy_j() - energy_start : std::nan("");

  // The breakdown (METRICS.md, "Breakdown"): further steps marked in detail, one untimed first.
  const std::unique_ptr<Replay> marked_replay = graph ? capture(mode, plan, true) : nullptr;
  std::vector<StepTimes> marked;
  ob::LoopHooks marked_hooks;
  step_hooks(mode, plan, marked_replay.get(), true, log, origin, origin_ms, marked, marked_hooks);
  marked_hooks.prepare = refill;
  ob::run_iterations({mode, 0, 0, 1, comm_, 0}, marked_hooks);
  run.marked_ms = ob::run_iterations({mode, 0, std::min(spec_.iters, kBreakdownSteps), 0, comm_, 0}, marked_hooks);
  collect(marked, origin_ms, rank_, layers, sync_->bucket_op(), schedule_row_->parts, run);
  return run;
}

// --check after a step: comm-only, the exact pattern sum on the device; seq and overlap, the ranks' weights equal.
void Trainer::check_step(ob::Mode mode, int iter, ModeRun& run) {
  if (mode == ob::Mode::kComm) {
    const float* reduced = sync_->reduced(comm_stream_);
    CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
    CUDA_CHECK(cudaMemset(scratch_.get(), 0, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(scratch_.get() + 1, 0xff, sizeof(unsigned long long)));
    count_pattern_wrong(reduced, model_->elements(), spec_.model.seed, ranks_, scratch_.get(), scratch_.get() + 1,
                        nullptr);
    const auto counts = scratch_.download();
    if (counts[0] > 0 && run.wrong == 0) {
      run.first_wrong = "iteration " + std::to_string(iter) + ", first wrong index " + std::to_string(counts[1]);
    }
    run.wrong = std::max<std::uint64_t>(run.wrong, counts[0]);
  } else if (mode != ob::Mode::kCompute) {
    const std::uint64_t print = weight_fingerprint();
    std::uint64_t lo = 0, hi = 0;
    MPI_CHECK(MPI_Allreduce(&print, &lo, 1, MPI_UINT64_T, MPI_MIN, comm_));
    MPI_CHECK(MPI_Allreduce(&print, &hi, 1, MPI_UINT64_T, MPI_MAX, comm_));
    run.ranks_agree = run.ranks_agree && lo == hi;
  }
}

}  // namespace phase4
