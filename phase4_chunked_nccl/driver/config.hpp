// Phase 4's options: the MLP, how its gradient is bucketed, the modes and the sweeps.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/modes.hpp"
#include "common/options.hpp"
#include "common/watchdog.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {

// What the NCCL communicator is made with (ncclConfig_t): a sweep point with other settings needs a new one.
struct NcclSettings {
  int max_ctas = 0, min_ctas = 0;  // maxCTAs, minCTAs (0: NCCL's default)
  CtaPolicy cta_policy = CtaPolicy::kDefault;  // CTAPolicy
  bool operator==(const NcclSettings& other) const {
    return max_ctas == other.max_ctas && min_ctas == other.min_ctas && cta_policy == other.cta_policy;
  }
};

struct Config {
  ob::CommonOptions common;
  ob::FaultOptions fault;
  int hidden = 4096;
  int layers = 16;
  int batch = 512;  // rows per rank
  // --model-family (core/families.hpp), or the family an option given chooses (--model: the transformer), whose row
  // resolves its options (apply_family): then hidden is its width, layers its backward steps (a transformer's tensors
  // with a gradient) and batch its rows per rank and micro-step (seq x micro_batch).
  std::string family = kDefaultFamily;
  std::string model;  // --model: a named model (a preset or a config.json)
  int seq = 2048, micro_batch = 1, blocks = 0;  // tokens per sequence, sequences per rank, the first N blocks (0: all)
  TransformerShape shape;  // --model's, once read
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  int chunks = 0;  // > 0: that many equal buckets instead of size-capped ones
  bool tf32 = true;
  float lr = 0.01f;
  RunMode mode = RunMode::kAll;
  StreamPriority comm_priority = StreamPriority::kNormal;  // the comm stream's priority
  int nccl_max_ctas = 0;  // ncclConfig_t.maxCTAs (0: NCCL's default)
  int nccl_min_ctas = 0;  // ncclConfig_t.minCTAs (0: NCCL's default)
  CtaPolicy nccl_cta_policy = CtaPolicy::kDefault;  // ncclConfig_t.CTAPolicy
  Transport transport = Transport::kNvlink;  // how NCCL moves data between the GPUs (transport.hpp)
  int emulate_nodes = 1;  // the ranks split into this many "nodes" by NCCL_HOSTID (transport.hpp, node_of_rank)
  // NCCL's socket transport: helper threads per connection and sockets per thread (NCCL_SOCKET_NTHREADS,
  // NCCL_NSOCKS_PERTHREAD; 0: NCCL's own), a faster network between emulated nodes (transport.hpp).
  int socket_threads = 0, socks_per_thread = 0;
  bool nccl_path = false;  // read the path NCCL took from its INFO log into the metadata (nccl_path.hpp)
  WireType comm_dtype = WireType::kFp32;  // the type the gradient travels in
  int accum_steps = 1;  // micro-steps per step: gradients accumulate, communication only after the last
  bool power = false;  // sample every GPU's power (NVML) and measure energy per iteration
  bool graph = false;  // replay each step as one captured CUDA graph
  std::string sync = "nccl";  // how buckets are synchronised: a strategy's name (sync/registry.hpp)
  int gemm_sm_margin = 0;  // SMs the GEMMs leave to communication (cublasSetSmCountTarget)
  KnobValues knobs = default_knobs();  // the schedules' own options (--NAME of each row's knobs: core/knobs.hpp)
  PlanMode plan_mode = PlanMode::kCaps;  // caps: --bucket-mb/--first-bucket-mb or --chunks; auto: the planner's
  std::string plan_syncs;  // strategies --plan auto chooses among (comma-separated; empty: --sync alone)
  std::vector<std::string> calibrations;  // calibration files to predict with (planner.hpp): each point its model's
  bool calibrate = false;  // measure the calibration first (written beside the summary)
  std::vector<std::uint64_t> plan_ends;  // --plan auto, once chosen: the buckets' end elements
  std::vector<std::string> sweeps;  // NAME=V1,V2,...: one of sweep_names(); several: every combination, first outermost
  bool shuffle = false;  // --order-seed given: the points run in an order shuffled from order_seed
  std::uint64_t order_seed = 0;
  int passes = 1;  // the modes run this many times in turn, each pass timing its share of --iters (runner.hpp)
  bool shape_swept = false;  // this point's hidden, layers and batch come from a shape sweep (in its label)
  std::vector<double>
      interference_mb;  // --mode interference: the message sizes (MiB; empty: 1, 2, 4, ... to the gradient)
  double interference_window_ms = 20;  // --mode interference: each loop's length alone

  std::vector<ob::Mode> modes() const;  // in the one run order (ob::in_run_order)
  const FamilyRow& family_row() const { return phase4::family_row(family); }
  // The specs the rooms below the driver take (core/spec.hpp), resolved from these options.
  ModelSpec model_spec() const;
  SyncSpec sync_spec() const;
  StepSpec step_spec() const;
  GradientLayout layout() const { return model_spec().layout(); }
  BucketPlan plan() const;
  double grad_mb() const { return model_spec().grad_mb(); }
  double device_bytes() const;  // weights, gradients, activations and work buffers on one GPU
  // This configuration once per combination of the sweeps' values (itself when no sweep), in table order.
  std::vector<Config> sweep_points() const;
  // The same points in the order they run: shuffled from order_seed when shuffle is set (ob::shuffled_order).
  std::vector<Config> run_order() const;
  std::string point_label() const;  // "chunks=20", "bucket-mb=25", with the other swept options when set
  std::string shape_label() const;  // "4096x16x512": hidden x layers x batch
  Config accumulation_reference() const;  // one step on the K-times batch that K micro-steps must equal
  Config strategy_reference() const;  // the same with the reference strategy (nccl), whose weights every one must equal
  // The strategy whose isolated communication bound_ref also takes (where faster): the row's reference (nccl, or
  // for a sharded strategy sharded: the same collectives on NCCL's ring kernels).
  std::string comm_reference() const;
  const ScheduleRow& schedule() const;  // the row of the schedule that drives --sync's strategy
  std::vector<std::string> planned_syncs() const;  // --plan-syncs, or --sync alone
  std::vector<double> interference_sizes() const;  // --interference-mb, or powers of 2 from 1 MiB to the gradient
  // What the communicator is made with; a strategy that needs a CTA policy (ce: zero) sets it.
  NcclSettings nccl_settings() const;
};

// The options --sweep takes (phase 4's communication options).
const std::vector<std::string>& sweep_names();

void add_options(CLI::App& app, Config& config);
// Throws ob::UsageError. The model family's row resolves its options first (a --model shape read; hidden, layers
// and batch set).
void validate(const CLI::App& app, Config& config);
// The files a run reads (--calibration, the model's: a --model config.json): no output may be one of them.
std::vector<ob::NamedPath> input_files(const Config& config);

}  // namespace phase4
