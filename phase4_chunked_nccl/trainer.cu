#include <algorithm>
#include <cmath>
#include <functional>

#include "common/cuda/cublas_gemm.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/event_timer.hpp"
#include "common/iteration.hpp"
#include "common/mpi_check.hpp"
#include "common/nvtx.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/kernels.cuh"
#include "phase4_chunked_nccl/trainer.hpp"

namespace phase4 {

// The events of one step, as indices into an EventLog (-1: not recorded).
struct StepMarks {
  ob::EventLog* log = nullptr;
  int start = -1, forward_end = -1, update_start = -1, end = -1;
  std::vector<int> step_begin, step_end;      // per backward step, compute stream
  std::vector<int> bucket_begin, bucket_end;  // per bucket, comm stream
  std::vector<int> gather_begin, gather_end;  // per forward layer, comm stream (sharded strategies)
  std::vector<int> layer_end;                 // per forward layer, compute stream
  // Per bucket, the host clock around the strategy's communicate(): how long enqueuing it held the host thread
  // (a collective that blocks the host delays the compute launched after it). Only with a log.
  std::vector<ob::SteadyClock::time_point> enqueue_begin, enqueue_end;
  int mark(cudaStream_t stream) { return log ? log->record(stream) : -1; }
};

namespace {

StepMarks blank_marks(ob::EventLog* log, int layers, const BucketPlan& plan) {
  StepMarks marks;
  marks.log = log;
  marks.step_begin.assign(layers, -1);
  marks.step_end.assign(layers, -1);
  marks.bucket_begin.assign(plan.buckets.size(), -1);
  marks.bucket_end.assign(plan.buckets.size(), -1);
  marks.gather_begin.assign(layers, -1);
  marks.gather_end.assign(layers, -1);
  marks.layer_end.assign(layers, -1);
  if (log) {
    marks.enqueue_begin.resize(plan.buckets.size());
    marks.enqueue_end.resize(plan.buckets.size());
  }
  return marks;
}

// The same step in milliseconds since the mode's origin event.
struct StepTimes {
  double start = 0, forward_end = 0, update_start = 0, end = 0;
  std::vector<double> step_begin, step_end, bucket_begin, bucket_end, gather_begin, gather_end, layer_end;
  std::vector<double> enqueue_begin, enqueue_end;  // host clock, ms on the same origin (eager only)
};

StepTimes resolve(const StepMarks& m, const std::function<double(int)>& at) {
  auto one = [&](int index) { return index < 0 ? std::nan("") : at(index); };
  auto all = [&](const std::vector<int>& indices) {
    std::vector<double> times;
    for (int index : indices) times.push_back(one(index));
    return times;
  };
  return {one(m.start), one(m.forward_end), one(m.update_start), one(m.end),
          all(m.step_begin), all(m.step_end), all(m.bucket_begin), all(m.bucket_end),
          all(m.gather_begin), all(m.gather_end), all(m.layer_end)};
}

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

Trainer::Trainer(const Config& config, int rank, int ranks, ncclComm_t nccl, MPI_Comm comm,
                 const ob::PowerMonitor* power)
    : config_(config), rank_(rank), ranks_(ranks), nccl_(nccl), comm_(comm), power_(power), scratch_(2) {
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  compute_ = ob::make_stream();
  comm_stream_ = ob::make_stream(config.comm_priority == "high" ? greatest : least);
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
  if (config.gemm_sm_margin > 0) {  // the runner checked that the margin leaves SMs to compute on
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUBLAS_CHECK(cublasSetSmCountTarget(cublas_, sms - config.gemm_sm_margin));
  }
  const std::uint64_t elements = static_cast<std::uint64_t>(config.layers) * config.hidden * config.hidden;
  sync_ = make_sync(config.sync, {config, rank, ranks, nccl, elements});
  model_ = std::make_unique<Mlp>(config, rank, cublas_, sync_->gradient(), sync_->weights());
}

Trainer::~Trainer() = default;

void Trainer::reset_weights() {
  sync_->drop_deferred();
  model_->reset_weights(compute_);
  CUDA_CHECK(cudaStreamSynchronize(compute_));
}

void Trainer::settle() {
  if (!sync_->sharded()) return;
  for (int layer = 1; layer <= config_.layers; ++layer) sync_->apply_deferred(layer, model_->weights(), compute_);
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  for (int layer = 1; layer <= config_.layers; ++layer) sync_->gather(layer, model_->weights(), comm_stream_);
  CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
}

cudaEvent_t Trainer::layer_event(std::vector<ob::CudaEvent>& events, int layer) {
  while (static_cast<int>(events.size()) < layer) events.push_back(ob::make_sync_event());
  return events[layer - 1];
}

std::vector<float> Trainer::download_weights() {
  settle();
  std::vector<float> w(model_->elements());
  CUDA_CHECK(cudaMemcpy(w.data(), model_->weights(), w.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return w;
}

std::uint64_t Trainer::weight_fingerprint() {
  settle();
  CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, sizeof(unsigned long long), compute_));
  fingerprint(model_->weights(), model_->elements(), scratch_.get(), compute_);
  unsigned long long value = 0;
  CUDA_CHECK(cudaMemcpyAsync(&value, scratch_.get(), sizeof value, cudaMemcpyDeviceToHost, compute_));
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  return value;
}

float Trainer::update_scale() const { return config_.lr / static_cast<float>(ranks_); }  // the average over ranks

void Trainer::update(cudaStream_t stream) { sync_->update(model_->weights(), update_scale(), model_->elements(), stream); }

void Trainer::step(ob::Mode mode, const BucketPlan& plan, StepMarks* m) {
  const int layers = config_.layers, micro_steps = config_.accum_steps;
  const auto& buckets = plan.buckets;
  // `whole`: each bucket synchronised to the end on the comm stream; otherwise the strategy may leave a part to
  // after_step() and finish() (ce: the slice sums, on the compute stream). Whole buckets follow one another on the
  // comm stream with nothing between them, so one event ends a bucket and begins the next: an event recorded between
  // two collectives holds the second back by ~2.5 us (nccl-sym's 4 MiB buckets: 125 GB/s with two, 135 with one).
  auto communicate = [&](std::size_t from, std::size_t to, bool whole) {
    for (std::size_t b = from; b < to; ++b) {
      ob::NvtxRange range("bucket " + std::to_string(b) + " " + config_.sync);
      m->bucket_begin[b] = whole && b > from ? m->bucket_end[b - 1] : m->mark(comm_stream_);
      if (m->log) m->enqueue_begin[b] = ob::SteadyClock::now();
      if (whole) {
        sync_->synchronise(buckets[b], comm_stream_);
      } else {
        sync_->communicate(buckets[b], comm_stream_);
      }
      if (m->log) m->enqueue_end[b] = ob::SteadyClock::now();
      m->bucket_end[b] = m->mark(comm_stream_);
    }
  };
  auto hand_over = [&](cudaStream_t from, cudaEvent_t event, cudaStream_t to) {
    CUDA_CHECK(cudaEventRecord(event, from));
    CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
  };
  const bool gathers = sync_->sharded() && mode != ob::Mode::kCompute;
  auto gather = [&](int layer) {  // forward layer `layer`'s weights from every rank's slices, on the comm stream
    ob::NvtxRange range("gather layer " + std::to_string(layer));
    m->gather_begin[layer - 1] = m->mark(comm_stream_);
    sync_->gather(layer, model_->weights(), comm_stream_);
    m->gather_end[layer - 1] = m->mark(comm_stream_);
    CUDA_CHECK(cudaEventRecord(layer_event(gathered_, layer), comm_stream_));
  };
  if (mode == ob::Mode::kComm) {
    m->start = m->mark(comm_stream_);
    communicate(0, buckets.size(), true);
    for (int layer = 1; gathers && layer <= layers; ++layer) gather(layer);
    m->end = m->mark(comm_stream_);
    return;
  }
  m->start = m->mark(compute_);
  for (int k = 0; k + 1 < micro_steps; ++k) {  // micro-steps that only accumulate
    model_->forward(k, compute_);
    for (int s = 0; s < layers; ++s) model_->backward_step(s, k > 0, compute_);
  }
  Mlp::LayerHook before;
  const Mlp::LayerHook after = [&](int layer) { m->layer_end[layer - 1] = m->mark(compute_); };
  if (gathers) hand_over(compute_, handoff_, comm_stream_);  // the previous update is done
  if (gathers && mode == ob::Mode::kSeq) {
    for (int layer = 1; layer <= layers; ++layer) gather(layer);
    hand_over(comm_stream_, comm_done_, compute_);
  } else if (gathers) {  // overlap: `ahead` layers updated (the deferred update) and gathered before the forward,
                         // one more as each layer starts
    const int ahead = config_.prefetch > 0 ? std::min(config_.prefetch, layers) : layers;
    auto prepare = [&](int layer) {
      sync_->apply_deferred(layer, model_->weights(), compute_);
      hand_over(compute_, layer_event(reached_, layer), comm_stream_);
      gather(layer);
    };
    for (int layer = 1; layer <= ahead; ++layer) prepare(layer);
    before = [&, ahead, prepare](int layer) {
      if (layer + ahead <= layers) prepare(layer + ahead);
      CUDA_CHECK(cudaStreamWaitEvent(compute_, layer_event(gathered_, layer), 0));
    };
  }
  model_->forward(micro_steps - 1, compute_, before, after);
  m->forward_end = m->mark(compute_);
  std::size_t next_bucket = 0;
  for (int s = 0; s < layers; ++s) {
    m->step_begin[s] = s == 0 ? m->forward_end : m->step_end[s - 1];
    model_->backward_step(s, micro_steps > 1, compute_);
    const std::size_t ready = next_bucket;
    for (; next_bucket < buckets.size() && buckets[next_bucket].ready_after == s; ++next_bucket) {
      sync_->bucket_ready(buckets[next_bucket], compute_);  // part of making the gradient, in every mode
    }
    m->step_end[s] = m->mark(compute_);
    if (mode != ob::Mode::kOverlap) continue;
    if (ready != next_bucket) {
      hand_over(compute_, handoff_, comm_stream_);
      communicate(ready, next_bucket, false);
    }
    sync_->after_step(s, compute_, comm_stream_);
  }
  if (mode == ob::Mode::kOverlap) sync_->finish(compute_, comm_stream_);
  if (mode == ob::Mode::kSeq) {
    hand_over(compute_, handoff_, comm_stream_);
    communicate(0, buckets.size(), true);
  }
  if (mode == ob::Mode::kSeq || mode == ob::Mode::kOverlap) hand_over(comm_stream_, comm_done_, compute_);
  m->update_start = m->mark(compute_);
  ob::NvtxRange range("update");
  if (gathers && mode == ob::Mode::kOverlap) {
    sync_->defer_update(update_scale());  // into the next step's forward
  } else {
    update(compute_);
  }
  m->end = m->mark(compute_);
}

// The GPU sleep that releases both loops of an interference pass at once, and gives the host a head start.
constexpr double kInterferenceGateMs = 2;
// How many times its length alone a loop runs when it covers the other: a covered loop slowed down more than this
// many times outlasts it (the row's `covered` is then 0).
constexpr double kInterferenceCover = 3;

Interference Trainer::interference(std::uint64_t elements, double window_ms, int passes) {
  Interference result;
  BucketPlan one;
  one.elements = model_->elements();
  one.buckets = {{0, std::min(elements, one.elements), 0}};
  const Bucket bucket = sync_->adapt(one).buckets.front();
  result.elements = bucket.size();
  // The GEMM's operands (uniform values, never zeros) and the bucket's data (the comm mode's rank pattern; summed in
  // place pass after pass its values grow, which does not change what a sum costs).
  const int h = config_.hidden, b = config_.batch;
  ob::DeviceBuffer<float> a(static_cast<std::size_t>(b) * h), dz(a.size()), dw(static_cast<std::size_t>(h) * h);
  fill_uniform(a.get(), a.size(), config_.common.seed + 11u, 1.0f, compute_);
  fill_uniform(dz.get(), dz.size(), config_.common.seed + 12u, 1.0f, compute_);
  fill_rank_pattern(sync_->gradient(), model_->elements(), config_.common.seed, rank_, comm_stream_);
  sync_->bucket_ready(bucket, comm_stream_);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto gemm = [&] {
    ob::cublas_gemm(cublas_, config_.tf32, {h, h, b, true, false}, a.get(), dz.get(), dw.get(), compute_);
  };
  const auto collective = [&] { sync_->synchronise(bucket, comm_stream_); };
  // One pass: `gemms` GEMMs and `comms` collectives released together by a gate (2 ms of GPU sleep on the compute
  // stream, the comm stream waiting for its end) and queued interleaved, each loop in step with its share of the
  // pass, so the host keeps both streams fed (a launch queue holds only so much: queueing one loop whole first
  // would block the host and starve the other); ms per GEMM and per collective, and whether the GEMM loop ended
  // first.
  struct Pass {
    double gemm_ms = 0, comm_ms = 0;
    bool gemm_first = false;
  };
  ob::EventLog log;
  const auto pass = [&](int gemms, int comms) {
    MPI_CHECK(MPI_Barrier(comm_));
    log.clear();
    gpu_sleep(kInterferenceGateMs, compute_);
    const int gate = log.record(compute_);
    CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, log.event(gate), 0));
    for (int g = 0, c = 0; g < gemms || c < comms;) {
      if (c >= comms || (g < gemms && static_cast<double>(g) * comms <= static_cast<double>(c) * gemms)) {
        gemm();
        ++g;
      } else {
        collective();
        ++c;
      }
    }
    const int gemm_end = log.record(compute_), comm_end = log.record(comm_stream_);
    CUDA_CHECK(cudaDeviceSynchronize());
    return Pass{gemms > 0 ? log.ms_between(gate, gemm_end) / gemms : 0.0,
                comms > 0 ? log.ms_between(gate, comm_end) / comms : 0.0, log.ms_between(gemm_end, comm_end) >= 0};
  };
  const auto count = [&](double per_op_ms, double factor) {
    return static_cast<int>(std::clamp(std::ceil(factor * window_ms / std::max(per_op_ms, 1e-3)), 3.0, 100000.0));
  };
  // A first look at each alone sizes the loops (after a warm-up of clocks, NCCL's connections, cuBLAS's choice).
  pass(3, 0);
  pass(0, 3);
  // Every rank queues as many collectives (the slowest rank's guesses), or NCCL would wait for ever.
  double guesses[2] = {pass(3, 0).gemm_ms, pass(0, 3).comm_ms};
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, guesses, 2, MPI_DOUBLE, MPI_MAX, comm_));
  const double gemm_guess = guesses[0], comm_guess = guesses[1];
  for (int p = 0; p < passes; ++p) {
    result.gemm_ms.push_back(pass(count(gemm_guess, 1), 0).gemm_ms);
    result.comm_ms.push_back(pass(0, count(comm_guess, 1)).comm_ms);
    const Pass inside_comm = pass(count(gemm_guess, 1), count(comm_guess, kInterferenceCover));
    result.gemm_overlap_ms.push_back(inside_comm.gemm_ms);
    const Pass inside_gemm = pass(count(gemm_guess, kInterferenceCover), count(comm_guess, 1));
    result.comm_overlap_ms.push_back(inside_gemm.comm_ms);
    result.covered = result.covered && inside_comm.gemm_first && !inside_gemm.gemm_first;
  }
  return result;
}

double Trainer::comm_gradient_error(const BucketPlan& plan) {
  StepMarks none = blank_marks(nullptr, config_.layers, plan);
  step(ob::Mode::kCompute, plan, &none);  // leaves this rank's gradient, and the strategy's wire copy of it
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
  std::unique_ptr<GradientSync> other = make_sync(sync, {config_, rank_, ranks_, nccl_, model_->elements()});
  std::swap(sync_, other);
  struct Restore {  // the trainer's own strategy comes back, also when the run throws
    std::unique_ptr<GradientSync>& a;
    std::unique_ptr<GradientSync>& b;
    ~Restore() { std::swap(a, b); }
  } restore{sync_, other};
  return run(ob::Mode::kComm, plan, false, origin);
}

ModeRun Trainer::run(ob::Mode mode, const BucketPlan& plan, bool check, ob::SteadyClock::time_point origin,
                     int steps, bool eager) {
  double origin_ms = 0, energy_start = 0;
  ob::SteadyClock::time_point timed_start;
  ModeRun run;
  run.mode = mode;
  const int layers = config_.layers, nb = static_cast<int>(plan.buckets.size());
  run.step_ms.assign(layers, {});
  run.bucket_ms.assign(nb, {});
  run.layer_ms.assign(layers, {});
  if (sync_->sharded() && mode != ob::Mode::kCompute) run.gather_ms.assign(layers, {});
  const bool timing = steps <= 0, graph = config_.graph && !eager, comm_only = mode == ob::Mode::kComm;
  const std::size_t n = model_->elements();
  cudaStream_t first_stream = comm_only ? comm_stream_.get() : compute_.get();

  ob::EventLog log;           // eager: every mark of the timed steps; graph: only the origin
  ob::EventLog graph_log;     // graph: the marks inside the graph, recorded again by every replay
  StepMarks captured = blank_marks(&graph_log, layers, plan);
  CapturedStep captured_step;
  if (graph) {
    graph_log.reserve(4 + 5 * layers + 2 * nb);
    if (mode != ob::Mode::kCompute) {  // NCCL sets up connections on a communicator's first collectives: not in a capture
      for (const auto& bucket : plan.buckets) sync_->synchronise(bucket, comm_stream_);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    captured_step.capture(first_stream, [&] { step(mode, plan, &captured); });
  }

  std::vector<StepTimes> timed;
  StepMarks marks;
  const ob::LoopPlan loop{mode, config_.common.warmup, config_.common.iters, steps, comm_};
  ob::LoopHooks hooks;
  hooks.prepare = [&](const ob::Iteration&) {
    if (comm_only) {  // the pattern (and the strategy's wire copy): the comm mode times the communication alone
      fill_rank_pattern(sync_->gradient(), n, config_.common.seed, rank_, comm_stream_);
      for (const auto& bucket : plan.buckets) sync_->bucket_ready(bucket, comm_stream_);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  };
  hooks.step = [&](const ob::Iteration& it) {
    if (it.timed && log.size() == 0) {  // the origin of this mode's timeline
      log.record(compute_);
      origin_ms = ob::micros_since(origin, ob::SteadyClock::now()) / 1000.0;
      energy_start = power_ ? power_->energy_j() : std::nan("");
      timed_start = ob::SteadyClock::now();
    }
    marks = blank_marks(it.timed && !graph ? &log : nullptr, layers, plan);
    ob::NvtxRange range(ob::mode_name(mode));
    if (graph) {
      captured_step.launch(first_stream);
    } else {
      step(mode, plan, &marks);
    }
  };
  hooks.elapsed_ms = [&](const ob::Iteration& it) {  // CUDA events: the step's first to last mark
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!it.timed) return 0.0;
    if (graph) {
      timed.push_back(resolve(captured, [&](int index) { return ob::ms_between(log.event(0), graph_log.event(index)); }));
    } else {
      timed.push_back(resolve(marks, [&](int index) { return log.ms_since_origin(index); }));
      auto host_ms = [&](ob::SteadyClock::time_point t) { return ob::micros_since(origin, t) / 1000.0 - origin_ms; };
      for (std::size_t b = 0; b < marks.enqueue_begin.size(); ++b) {
        if (marks.bucket_begin[b] < 0) continue;  // a bucket this mode does not communicate
        timed.back().enqueue_begin.push_back(host_ms(marks.enqueue_begin[b]));
        timed.back().enqueue_end.push_back(host_ms(marks.enqueue_end[b]));
      }
    }
    return timed.back().end - timed.back().start;
  };
  hooks.check = [&](const ob::Iteration& it) {
    if (!check) return;
    if (comm_only) {
      const float* reduced = sync_->reduced(comm_stream_);
      CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
      CUDA_CHECK(cudaMemset(scratch_.get(), 0, sizeof(unsigned long long)));
      CUDA_CHECK(cudaMemset(scratch_.get() + 1, 0xff, sizeof(unsigned long long)));
      count_pattern_wrong(reduced, n, config_.common.seed, ranks_, scratch_.get(), scratch_.get() + 1, nullptr);
      const auto counts = scratch_.download();
      if (counts[0] > 0 && run.wrong == 0) {
        run.first_wrong = "iteration " + std::to_string(it.iter) + ", first wrong index " + std::to_string(counts[1]);
      }
      run.wrong = std::max<std::uint64_t>(run.wrong, counts[0]);
    } else if (mode != ob::Mode::kCompute) {
      const std::uint64_t print = weight_fingerprint();
      std::uint64_t lo = 0, hi = 0;
      MPI_CHECK(MPI_Allreduce(&print, &lo, 1, MPI_UINT64_T, MPI_MIN, comm_));
      MPI_CHECK(MPI_Allreduce(&print, &hi, 1, MPI_UINT64_T, MPI_MAX, comm_));
      run.ranks_agree = run.ranks_agree && lo == hi;
    }
  };
  run.iter_ms = ob::run_iterations(loop, hooks);
  if (timing) {
    run.timed_s = ob::micros_since(timed_start, ob::SteadyClock::now()) / 1e6;
    // NVML's energy counter advances in steps (tens of ms on an H100): shorter windows would read 0.
    const bool long_enough = run.timed_s >= kShortestEnergyWindowS;
    run.energy_j = power_ && long_enough ? power_->energy_j() - energy_start : std::nan("");
  }

  const std::string compute_lane = std::string(ob::mode_name(mode)) + ":compute";
  const std::string comm_lane = std::string(ob::mode_name(mode)) + ":comm";
  const std::string host_lane = std::string(ob::mode_name(mode)) + ":host";
  for (std::size_t it = 0; it < timed.size(); ++it) {
    const StepTimes& t = timed[it];
    const int iter = static_cast<int>(it);
    auto event = [&](const std::string& lane, const char* name, int chunk, double from, double to) {
      run.events.push_back({rank_, lane, name, iter, chunk, 1000.0 * (origin_ms + from), 1000.0 * (origin_ms + to)});
      return to - from;
    };
    if (!comm_only) {
      run.forward_ms.push_back(event(compute_lane, "forward", -1, t.start, t.forward_end));
      for (int l = 0; l < layers; ++l) run.layer_ms[l].push_back(t.layer_end[l] - (l == 0 ? t.start : t.layer_end[l - 1]));
      double backward = 0;
      for (int s = 0; s < layers; ++s) {
        const double ms = event(compute_lane, "backward", layers - s, t.step_begin[s], t.step_end[s]);
        run.step_ms[s].push_back(ms);
        backward += ms;
      }
      run.backward_total_ms.push_back(backward);
      run.update_ms.push_back(event(compute_lane, "update", -1, t.update_start, t.end));
    }
    if (mode != ob::Mode::kCompute) {
      for (int b = 0; b < nb; ++b) {
        run.bucket_ms[b].push_back(event(comm_lane, sync_->bucket_op(), b, t.bucket_begin[b], t.bucket_end[b]));
      }
      for (std::size_t l = 0; l < run.gather_ms.size(); ++l) {
        run.gather_ms[l].push_back(event(comm_lane, "allgather", static_cast<int>(l) + 1, t.gather_begin[l],
                                         t.gather_end[l]));
      }
      double enqueue = 0;
      for (std::size_t b = 0; b < t.enqueue_begin.size(); ++b) {
        enqueue += event(host_lane, "enqueue", static_cast<int>(b), t.enqueue_begin[b], t.enqueue_end[b]);
      }
      if (!t.enqueue_begin.empty()) run.enqueue_ms.push_back(enqueue);
    }
  }
  return run;
}

}  // namespace phase4
