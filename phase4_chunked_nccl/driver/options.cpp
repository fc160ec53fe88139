// Phase 4's command line: its options (the swept ones declared in sweep_options.cpp) and what they must agree on.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"
#include "common/path_options.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "phase4_chunked_nccl/driver/sweep_options.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4 {
namespace {

// The network between emulated nodes: whole numbers in [least, most].
struct NetworkOption {
  const char* name;
  int Config::*member;
  int least, most;
  const char* help;
};
const NetworkOption kNetworkOptions[] = {
    {"--emulate-nodes", &Config::emulate_nodes, 1, 1024,
     "Split the ranks into N nodes on this host (consecutive ranks, NCCL_HOSTID per node): NCCL joins the nodes by "
     "its network transport as it would separate hosts; N divides the ranks"},
    {"--socket-threads", &Config::socket_threads, 0, 16,
     "NCCL's socket transport (emulated nodes, --transport socket): helper threads per connection "
     "(NCCL_SOCKET_NTHREADS); with --socks-per-thread, a faster network (0: NCCL's own)"},
    {"--socks-per-thread", &Config::socks_per_thread, 0, 64,
     "NCCL's socket transport: sockets per helper thread (NCCL_NSOCKS_PERTHREAD; threads x sockets at most 64, "
     "NCCL's limit; 0: NCCL's own)"},
};

// How the gradient travels: the comm stream, NCCL's CTAs, the wire's type, the strategy.
void add_communication_options(CLI::App& app, Config& config) {
  ob::add_enum_option(app, "--comm-priority", config.comm_priority, priority_names(),
                      "Priority of the communication stream");
  add_whole_option(app, config, "nccl-max-ctas");
  add_whole_option(app, config, "nccl-min-ctas");
  ob::add_enum_option(app, "--nccl-cta-policy", config.nccl_cta_policy, cta_policy_names(),
                      "NCCL's CTA policy: default, efficiency (fewest CTAs that keep decent speed), zero (none where "
                      "it can)");
  ob::add_enum_option(app, "--transport", config.transport, transport_names(),
                      "How NCCL moves data between the GPUs: nvlink (peer to peer, NCCL's choice), shm (through host "
                      "shared memory), socket (its network transport over loopback); the NCCL variables it sets are "
                      "in the metadata");
  for (const auto& o : kNetworkOptions) {
    ob::add_checked_option(app, o.name, config.*o.member, o.help, CLI::Range(o.least, o.most));
  }
  app.add_flag("--nccl-path", config.nccl_path,
               "Read the path NCCL took (its transports, channels, copy engines, registered buffers) from its own "
               "INFO log into the metadata's nccl_path");
  ob::add_enum_option(app, "--comm-dtype", config.comm_dtype, wire_names(),
                      "Type the gradient is all-reduced in: fp32, or bf16 (cast into a half-size buffer and back)");
  add_whole_option(app, config, "accum-steps");
  std::string strategies;
  for (const auto& row : sync_rows()) strategies += "\n  " + row.name + ": " + row.help;
  ob::add_checked_option(app, "--sync", config.sync, "How gradient buckets are synchronised:" + strategies,
                         CLI::IsMember(sync_names()));
  add_whole_option(app, config, "gemm-sm-margin");
  for (const Knob& knob : all_knobs()) add_whole_option(app, config, knob.name);  // the schedules' own
}

// The planner's: which plan, among which strategies, from which calibration.
void add_planner_options(CLI::App& app, Config& config) {
  ob::add_enum_option(app, "--plan", config.plan_mode, plan_names(),
                      "Bucket plan: caps (--bucket-mb, --first-bucket-mb or --chunks) or auto (the planner's: least "
                      "predicted step from a calibration, --calibration or measured first)");
  ob::add_list_option(
      app, "--plan-syncs", config.plan_syncs,
      "Strategies --plan auto chooses among and --calibrate measures, comma-separated (default: --sync)");
  ob::add_input_option(app, "--calibration", config.calibrations,
                       "Calibration file (from --calibrate, same model, GPU, ranks and commit): adds predicted_ms; "
                       "repeat it for a shape sweep (each point takes its own model's)")
      ->allow_extra_args(false);
  app.add_flag("--calibrate", config.calibrate,
               "Measure the planner's calibration first (compute, and each strategy's buckets alone and overlapped "
               "over message sizes) and write it beside the summary as <stem>.calibration.json");
}

// What one sweep point asks of its strategy and of NCCL.
void validate_point(const Config& point) {
  if (point.chunks == 0) {
    const std::uint64_t elements = point.layout().elements();
    require_bucket_count("--bucket-mb", point.bucket_mb, elements);
    require_bucket_count("--first-bucket-mb", point.first_bucket_mb, elements);
  }
  // NCCL rejects minCTAs without maxCTAs (seen with 2.28: "invalid argument").
  const std::string min_ctas = std::to_string(point.nccl_min_ctas);
  ob::require(point.nccl_min_ctas == 0 || point.nccl_max_ctas > 0, "--nccl-min-ctas", min_ctas,
              "needs --nccl-max-ctas (or an nccl-max-ctas sweep)");
  ob::require(point.nccl_min_ctas <= point.nccl_max_ctas || point.nccl_max_ctas == 0, "--nccl-min-ctas", min_ctas,
              "at most --nccl-max-ctas (at every point of the sweep)");
  ob::require(1.0 * point.accum_steps * point.batch * point.hidden < 2147483647.0, "--accum-steps",
              std::to_string(point.accum_steps), "accum-steps * batch * hidden must stay below 2^31");
  std::vector<std::string> used = point.planned_syncs();
  used.push_back(point.sync);
  for (const auto& planned : used) {  // the point's strategy, and every one its plan may choose
    const SyncRow* row = find_sync(planned);  // an unknown name is refused where --plan-syncs is read
    if (!row) continue;
    ob::require(row->bf16 || point.comm_dtype == WireType::kFp32, "--comm-dtype", name(point.comm_dtype),
                "--sync " + row->name + " moves fp32 only");
    ob::require(row->accumulation || point.accum_steps == 1, "--accum-steps", std::to_string(point.accum_steps),
                "--sync " + row->name + " runs one micro-step per step");
    ob::require(row->graph || !point.graph, "--graph", "on", "--sync " + row->name + " does not run under --graph");
    ob::require(!row->peer_access || point.transport == Transport::kNvlink, "--transport", name(point.transport),
                "--sync " + planned +
                    " needs the GPUs' peer access, which this transport turns off (--sync nccl and "
                    "sharded run on it)");
  }
  const SyncRow& sync = sync_row(point.sync);
  ob::require(sync.cta_policy == CtaPolicy::kDefault || point.nccl_cta_policy == CtaPolicy::kDefault ||
                  point.nccl_cta_policy == sync.cta_policy,
              "--nccl-cta-policy", name(point.nccl_cta_policy),
              "--sync " + sync.name + " needs CTA policy " + name(sync.cta_policy));
}

}  // namespace

void add_options(CLI::App& app, Config& config) {
  ob::add_common_options(app, config.common);
  std::string families;
  for (const auto& name : family_names()) {
    const FamilyRow& row = family_row(name);
    families += "\n  " + name + ": " + row.help + (row.chosen_by.empty() ? "" : " (chosen by " + row.chosen_by + ")");
  }
  ob::add_checked_option(
      app, "--model-family", config.family,
      "The model trained (default: " + std::string(kDefaultFamily) + "); each family takes its own options:" + families,
      CLI::IsMember(family_names()));
  ob::add_size_option(app, "--hidden", config.hidden, "Width H of every square layer", 1 << 16);
  ob::add_checked_option(app, "--layers", config.layers, "Layers L", CLI::Range(1, 4096));
  ob::add_size_option(app, "--batch", config.batch, "Rows per rank (each rank's data differs)", 1 << 24);
  const std::string presets = ob::join(transformer_presets());
  app.add_option("--model", config.model,
                 "A transformer instead of the square layers: a preset (" + presets +
                     ") or a Hugging Face style "
                     "config.json; its tensors are the backward steps (phase4_model lists them)");
  ob::add_checked_option(app, "--seq", config.seq, "With --model: tokens per sequence", CLI::Range(1, 1 << 17));
  ob::add_checked_option(app, "--micro-batch", config.micro_batch, "With --model: sequences per rank and micro-step",
                         CLI::Range(1, 1 << 16));
  ob::add_checked_option(app, "--blocks", config.blocks,
                         "With --model: its first N blocks, with the embeddings and head whole "
                         "(0: all)",
                         CLI::Range(0, 4096));
  ob::add_checked_option(app, "--bucket-mb", config.bucket_mb, "Bucket size cap (MiB), as DDP's bucket_cap_mb",
                         ob::finite_in(kLeastBucketMb, kMostBucketMb));
  ob::add_checked_option(app, "--first-bucket-mb", config.first_bucket_mb, "Cap of the first bucket (MiB)",
                         ob::finite_in(kLeastBucketMb, kMostBucketMb));
  add_whole_option(app, config, "chunks");
  app.add_flag("--tf32,!--no-tf32", config.tf32, "GEMMs on TF32 tensor cores (default on)");
  ob::add_checked_option(app, "--lr", config.lr, "SGD learning rate", ob::finite_in(0, 1e6));
  ob::add_enum_option(app, "--mode", config.mode, run_mode_names(),
                      "The modes to run (all: compute, comm, seq, overlap), or interference: instead of training, the "
                      "interference map (a backward GEMM of the model's shape and the strategy's collective, alone "
                      "and at once, per message size: the GEMM's slowdown and the collective's stretch)");
  app.add_option("--interference-mb", config.interference_mb,
                 "--mode interference: message sizes in MiB (default: 1, 2, 4, ... up to the gradient)")
      ->delimiter(',')
      ->check(ob::finite_in(1e-3, 1e6));
  ob::add_checked_option(app, "--interference-window-ms", config.interference_window_ms,
                         "--mode interference: how long each loop runs alone (the covering loop 3 times as long)",
                         ob::finite_in(0.1, 10000));
  add_communication_options(app, config);
  add_planner_options(app, config);
  app.add_flag("--power", config.power, "Sample each GPU's power every 20 ms (NVML) and report energy per iteration");
  app.add_flag("--graph", config.graph, "Capture each mode's step in a CUDA graph and replay it");
  ob::add_fault_options(app, config.fault);
  const std::string names = ob::join(sweep_names());
  app.add_option(
         "--sweep", config.sweeps,
         "Run every point in one process: NAME=V1,V2,... with NAME one of " + names +
             " (plan: auto, caps: --bucket-mb's, layer: a bucket per layer, or a bucket cap in MiB; shape: HxLxB); "
             "repeated: "
             "every combination of the values, the first sweep outermost")
      ->allow_extra_args(false);
  app.add_option("--order-seed", config.order_seed,
                 "Run the sweep's points in an order shuffled from this seed (recorded in the metadata's "
                 "point_order), so a comparison's contenders in one process take turns as they would in fresh "
                 "processes")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{4294967295ULL}));
  ob::add_checked_option(
      app, "--passes", config.passes,
      "Run the modes this many times in turn, each pass timing its share of --iters (and of --min-time-ms) "
      "after its own warm-up, so that a drift over the run reaches every mode alike (the calibration's too)",
      CLI::Range(1, 1000));
}

namespace {

// The model family: --model-family, or the one an option given chooses (--model: the transformer), or the default;
// the model options it does not take refused; then its row resolves the rest (a shape read; hidden, layers, batch).
void apply_family(const CLI::App& app, Config& config) {
  if (app.count("--model-family") == 0) {
    for (const auto& name : family_names()) {
      const std::string& option = family_row(name).chosen_by;
      if (!option.empty() && app.count(option) > 0) config.family = name;
    }
  }
  const FamilyRow& row = config.family_row();
  for (const auto& other : family_names()) {
    for (const auto& option : family_row(other).options) {
      ob::require(row.takes(option) || app.count(option) == 0, option, app.get_option(option)->as<std::string>(),
                  "not an option of --model-family " + row.name + " (it takes " + ob::join(row.options, ", ") + ")");
    }
  }
  if (!row.resolve) return;
  ModelSpec spec = config.model_spec();
  row.resolve(spec);
  config.shape = spec.shape;
  config.hidden = spec.hidden;
  config.layers = spec.layers;
  config.batch = spec.batch;
}

// The sweeps: each names a different option; bucket-mb and plan sweeps not with --chunks; a shape sweep not with
// --model; a calibration measured in the run (--calibrate, or --plan auto without --calibration) of one shape only.
void validate_sweeps(const Config& config) {
  std::vector<std::string> names;
  for (const auto& text : config.sweeps) {
    const Sweep sweep = parse_sweep(text);
    const std::string& name = sweep.parameter->name;
    ob::require(std::find(names.begin(), names.end(), name) == names.end(), "--sweep", text,
                "each option swept once (" + name + " is swept twice)");
    names.push_back(name);
    ob::require(!((name == "bucket-mb" || name == "plan") && config.chunks > 0), "--sweep", text,
                "a bucket-mb or plan sweep cannot be combined with --chunks");
    ob::require(name != "shape" || config.family_row().square_layers, "--sweep", text,
                "a shape sweep trains square layers: not with --model-family " + config.family);
    const bool measures = config.calibrate || (config.calibrations.empty() && [&] {
                            for (const auto& point : config.sweep_points()) {
                              if (point.plan_mode == PlanMode::kAuto) return true;
                            }
                            return false;
                          }());
    ob::require(name != "shape" || sweep.values.size() == 1 || !measures, "--sweep", text,
                "a calibration is measured for one shape: measure each shape with --calibrate and pass the files "
                "with --calibration");
  }
}

// A schedule's own option (its row's knobs) set other than its default needs a strategy of that schedule in the run
// (the points' strategies, or those they plan among): the others would ignore it.
void validate_schedule_options(const Config& config) {
  const auto points = config.sweep_points();
  std::vector<std::string> run;  // the schedules of the run's strategies
  for (const auto& point : points) {
    run.push_back(schedule_of(point.sync).name);
    for (const auto& sync : point.planned_syncs()) run.push_back(schedule_of(sync).name);
  }
  for (const Knob& knob : all_knobs()) {
    for (const auto& name : schedule_names()) {
      if (!schedule_row(name).knob(knob.name) || std::find(run.begin(), run.end(), name) != run.end()) continue;
      for (const auto& point : points) {
        const int value = knob_value(point.knobs, knob.name);
        ob::require(value == knob.fallback, "--" + knob.name, std::to_string(value),
                    "only for the " + name + " schedule's strategies (" + sync_list(name) + "), none in this run");
      }
    }
  }
}

// The socket transport's threads and sockets: where the ranks talk over a network, at most 64 sockets in all.
void validate_network(const Config& config) {
  const bool threads = config.socket_threads > 0;
  const std::string option = threads ? "--socket-threads" : "--socks-per-thread";
  const int value = threads ? config.socket_threads : config.socks_per_thread;
  ob::require(value == 0 || config.emulate_nodes > 1 || config.transport == Transport::kSocket, option,
              std::to_string(value), "a network between the ranks: --emulate-nodes 2 or more, or --transport socket");
  ob::require(std::max(config.socket_threads, 1) * std::max(config.socks_per_thread, 1) <= 64, "--socks-per-thread",
              std::to_string(config.socks_per_thread), "at most 64 sockets in all (x --socket-threads: NCCL's limit)");
}

}  // namespace

std::vector<ob::NamedPath> input_files(const Config& config) {
  std::vector<ob::NamedPath> inputs;
  for (const auto& file : config.calibrations) inputs.push_back({"--calibration", file});
  const FamilyRow& row = config.family_row();
  if (row.inputs) {
    for (const auto& file : row.inputs(config.model_spec())) inputs.push_back(file);
  }
  return inputs;
}

void validate(const CLI::App& app, Config& config) {
  apply_family(app, config);
  ob::require(!(config.chunks > 0 && (app.count("--bucket-mb") > 0 || app.count("--first-bucket-mb") > 0)), "--chunks",
              std::to_string(config.chunks), "--chunks and --bucket-mb/--first-bucket-mb exclude each other");
  ob::parse_fault(config.fault.inject_fault);
  validate_network(config);
  config.shuffle = app.count("--order-seed") > 0;
  ob::require(config.passes <= config.common.iters, "--passes", std::to_string(config.passes),
              "at most --iters (" + std::to_string(config.common.iters) + "): each pass times one iteration at least");
  // --plan-syncs before anything reads it (the sweeps take its first name): every item a strategy, each once, none
  // empty (",", "nccl,,ce" and "nccl,nccl" are refused, not read as no strategy or as one)
  const auto planned = ob::split_list(config.plan_syncs);
  std::vector<std::string> distinct = planned;
  std::sort(distinct.begin(), distinct.end());
  const bool listed = config.plan_syncs.empty() ||
      (static_cast<size_t>(std::count(config.plan_syncs.begin(), config.plan_syncs.end(), ',')) + 1 == planned.size() &&
       std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end());
  const auto known = [](const std::string& n) { return find_sync(n) != nullptr; };
  ob::require(listed && std::all_of(planned.begin(), planned.end(), known), "--plan-syncs", config.plan_syncs,
              "comma-separated strategies, each once: " + sync_list());
  validate_sweeps(config);
  ob::require(!(config.plan_mode == PlanMode::kAuto && config.chunks > 0), "--plan", name(config.plan_mode),
              "--plan auto chooses the buckets: not with --chunks");
  const bool plan_swept = std::any_of(config.sweeps.begin(), config.sweeps.end(),
                                      [](const std::string& s) { return s.rfind("plan=", 0) == 0; });
  ob::require(config.plan_syncs.empty() || config.plan_mode == PlanMode::kAuto || config.calibrate || plan_swept,
              "--plan-syncs", config.plan_syncs, "needs --plan auto or --calibrate");
  ob::require(!(config.calibrate && !config.calibrations.empty()), "--calibrate", "on",
              "measures a calibration: not with --calibration FILE");
  for (const auto& path :
       config.calibrations) {  // its content, here where no GPU is needed (GPU and ranks: at the run)
    Calibration::parse(ob::read_input_file("--calibration", path, kMostCalibrationBytes), path);
  }
  ob::require(1.0 * config.batch * config.hidden < 2147483647.0, "--batch", std::to_string(config.batch),
              "batch * hidden must stay below 2^31");
  const bool map = config.mode == RunMode::kInterference;
  ob::require(map || config.interference_mb.empty(), "--interference-mb",
              config.interference_mb.empty() ? "" : ob::format_number(config.interference_mb.front()),
              "needs --mode interference");
  ob::require(map || app.count("--interference-window-ms") == 0, "--interference-window-ms",
              ob::format_number(config.interference_window_ms), "needs --mode interference");
  for (const double mb : config.interference_mb) {
    ob::require(mb <= config.grad_mb(), "--interference-mb", ob::format_number(mb),
                "at most the gradient (" + ob::format_number(config.grad_mb()) + " MiB: --layers x --hidden^2 fp32)");
  }
  ob::require(!map || config.family_row().square_layers, "--mode", name(config.mode),
              "the interference map times square layers' GEMM: not with --model-family " + config.family);
  ob::require(!map || !(config.common.check || config.calibrate || config.plan_mode == PlanMode::kAuto), "--mode",
              name(config.mode),
              "the interference map times loops of one GEMM and one collective: not with --check, --calibrate or "
              "--plan auto");
  for (const auto& point : config.sweep_points()) validate_point(point);
  validate_schedule_options(config);
}

}  // namespace phase4
