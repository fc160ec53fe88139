#include "phase4_chunked_nccl/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "phase4_chunked_nccl/planner.hpp"

namespace phase4 {

void add_options(CLI::App& app, Config& config) {
  ob::add_common_options(app, config.common);
  app.add_option("--hidden", config.hidden, "Width H of every square layer")
      ->transform(ob::size_suffix())
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--layers", config.layers, "Layers L")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--batch", config.batch, "Rows per rank (each rank's data differs)")
      ->transform(ob::size_suffix())
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--bucket-mb", config.bucket_mb, "Bucket size cap (MiB), as DDP's bucket_cap_mb")
      ->check(ob::finite_in(1e-6, 1e6))
      ->capture_default_str();
  app.add_option("--first-bucket-mb", config.first_bucket_mb, "Cap of the first bucket (MiB)")
      ->check(ob::finite_in(1e-6, 1e6))
      ->capture_default_str();
  app.add_option("--chunks", config.chunks, "Cut the gradient into N equal buckets instead (not with --bucket-mb)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_flag("--tf32,!--no-tf32", config.tf32, "GEMMs on TF32 tensor cores (default on)");
  app.add_option("--lr", config.lr, "SGD learning rate")->check(ob::finite_in(0, 1e6))->capture_default_str();
  app.add_option("--mode", config.mode,
                 "seq|overlap|compute|comm|all, or interference: instead of training, the interference map (a "
                 "backward GEMM of the model's shape and the strategy's collective, alone and at once, per message "
                 "size: the GEMM's slowdown and the collective's stretch)")
      ->check(CLI::IsMember({"seq", "overlap", "compute", "comm", "all", "interference"}))
      ->capture_default_str();
  app.add_option("--interference-mb", config.interference_mb,
                 "--mode interference: message sizes in MiB (default: 1, 2, 4, ... up to the gradient)")
      ->delimiter(',')
      ->check(ob::finite_in(1e-3, 1e6));
  app.add_option("--interference-window-ms", config.interference_window_ms,
                 "--mode interference: how long each loop runs alone (the covering loop 3 times as long)")
      ->check(ob::finite_in(0.1, 10000))
      ->capture_default_str();
  app.add_option("--comm-priority", config.comm_priority, "Priority of the communication stream: normal|high")
      ->check(CLI::IsMember({"normal", "high"}))
      ->capture_default_str();
  app.add_option("--nccl-max-ctas", config.nccl_max_ctas, "NCCL's most CTAs per collective (fewer: less contention)")
      ->check(CLI::Range(1, 64));
  app.add_option("--nccl-min-ctas", config.nccl_min_ctas, "NCCL's fewest CTAs per collective")->check(CLI::Range(1, 64));
  app.add_option("--nccl-cta-policy", config.nccl_cta_policy,
                 "NCCL's CTA policy: default, efficiency (fewest CTAs that keep decent speed), zero (none where it can)")
      ->check(CLI::IsMember({"default", "efficiency", "zero"}))
      ->capture_default_str();
  app.add_option("--comm-dtype", config.comm_dtype,
                 "Type the gradient is all-reduced in: fp32, or bf16 (cast into a half-size buffer and back)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--accum-steps", config.accum_steps,
                 "Micro-steps per step (gradient accumulation; the all-reduces follow the last one's backward)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  std::string strategies;
  for (const auto& option : sync_options()) strategies += "\n  " + option.name + ": " + option.help;
  app.add_option("--sync", config.sync, "How gradient buckets are synchronised:" + strategies)
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const auto& option : sync_options()) names.push_back(option.name);
        return names;
      }()))
      ->capture_default_str();
  app.add_option("--gemm-sm-margin", config.gemm_sm_margin,
                 "SMs the GEMMs leave free for communication (cuBLAS SM-count target: the SMs less this)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--prefetch", config.prefetch,
                 "Sharded strategies: all-gathers issued ahead of the forward layer that needs them, in layers "
                 "(0: every layer's at the step's start)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--plan", config.plan_mode,
                 "Bucket plan: caps (--bucket-mb, --first-bucket-mb or --chunks) or auto (the planner's: least "
                 "predicted step from a calibration, --calibration or measured first)")
      ->check(CLI::IsMember({"caps", "auto"}))
      ->capture_default_str();
  app.add_option("--plan-syncs", config.plan_syncs,
                 "Strategies --plan auto chooses among and --calibrate measures, comma-separated (default: --sync)");
  app.add_option("--calibration", config.calibration,
                 "Calibration file (from --calibrate, same model, GPU, ranks and commit): adds predicted_ms")
      ->check(CLI::ExistingFile);
  app.add_flag("--calibrate", config.calibrate,
               "Measure the planner's calibration first (compute, and each strategy's buckets alone and overlapped "
               "over message sizes) and write it beside the summary as <stem>.calibration.json");
  app.add_flag("--power", config.power, "Sample each GPU's power every 20 ms (NVML) and report energy per iteration");
  app.add_flag("--graph", config.graph, "Capture each mode's step in a CUDA graph and replay it");
  ob::add_fault_options(app, config.fault);
  app.add_option("--sweep", config.sweep,
                 "Run every point in one process: NAME=V1,V2,... with NAME chunks, bucket-mb, nccl-max-ctas, "
                 "nccl-min-ctas, accum-steps, gemm-sm-margin, prefetch, sync or plan (auto, layer: a bucket per "
                 "layer, or a bucket cap in MiB)");
}

namespace {

// What --sweep can vary: whole numbers from `least` to `most` (bucket-mb: any number > 0), or (sync) a strategy
// name; and how a point takes its value.
struct SweepParameter {
  std::string name;
  enum Kind { kWhole, kNumber, kStrategy, kPlan } kind;
  double least, most;
  void (*apply)(Config&, const std::string&);
};

int whole(const std::string& text) { return static_cast<int>(*ob::parse_number(text)); }

const std::vector<SweepParameter>& sweep_parameters() {
  using P = SweepParameter;
  static const std::vector<SweepParameter> table = {
      {"chunks", P::kWhole, 1, 1 << 24, [](Config& c, const std::string& v) { c.chunks = whole(v); }},
      {"bucket-mb", P::kNumber, 0, 1e6,
       [](Config& c, const std::string& v) {
         c.chunks = 0;
         c.bucket_mb = *ob::parse_number(v);
       }},
      {"nccl-max-ctas", P::kWhole, 1, 64, [](Config& c, const std::string& v) { c.nccl_max_ctas = whole(v); }},
      {"nccl-min-ctas", P::kWhole, 1, 64, [](Config& c, const std::string& v) { c.nccl_min_ctas = whole(v); }},
      {"accum-steps", P::kWhole, 1, 1024, [](Config& c, const std::string& v) { c.accum_steps = whole(v); }},
      {"gemm-sm-margin", P::kWhole, 0, 1024, [](Config& c, const std::string& v) { c.gemm_sm_margin = whole(v); }},
      {"prefetch", P::kWhole, 0, 4096, [](Config& c, const std::string& v) { c.prefetch = whole(v); }},
      {"sync", P::kStrategy, 0, 0, [](Config& c, const std::string& v) { c.sync = v; }},
      {"plan", P::kPlan, 0, 1e6,
       [](Config& c, const std::string& v) {
         c.plan_mode = v == "auto" ? "auto" : "caps";
         c.chunks = v == "layer" ? c.layers : 0;
         if (v != "auto" && v != "layer") c.bucket_mb = c.first_bucket_mb = *ob::parse_number(v);
       }},
  };
  return table;
}

struct Sweep {
  const SweepParameter* parameter = nullptr;
  std::vector<std::string> values;
};

bool valid_value(const SweepParameter& parameter, const std::string& item) {
  if (parameter.kind == SweepParameter::kStrategy) {
    for (const auto& option : sync_options()) {
      if (option.name == item) return true;
    }
    return false;
  }
  if (parameter.kind == SweepParameter::kPlan && (item == "auto" || item == "layer")) return true;
  const auto value = ob::parse_number(item);
  if (!value || *value > parameter.most) return false;
  if (parameter.kind != SweepParameter::kWhole) return *value > parameter.least;
  return *value >= parameter.least && *value == std::floor(*value);
}

Sweep parse_sweep(const std::string& text) {
  std::string names;
  for (const auto& name : sweep_names()) names += (names.empty() ? "" : ", ") + name;
  const std::string allowed = "NAME=V1,V2,... with NAME one of " + names +
                              " (whole numbers >= 1, gemm-sm-margin and prefetch >= 0; bucket-mb > 0; sync: strategy names; plan: auto, "
                              "layer or a bucket cap > 0)";
  const auto equals = text.find('=');
  ob::require(equals != std::string::npos, "--sweep", text, allowed);
  Sweep sweep;
  for (const auto& parameter : sweep_parameters()) {
    if (parameter.name == text.substr(0, equals)) sweep.parameter = &parameter;
  }
  ob::require(sweep.parameter != nullptr, "--sweep", text, allowed);
  const std::string list = text.substr(equals + 1);
  sweep.values = ob::split_list(list);
  ob::require(!sweep.values.empty(), "--sweep", text, allowed);
  const bool no_empty_item = list.front() != ',' && list.back() != ',' && list.find(",,") == std::string::npos;
  ob::require(no_empty_item, "--sweep", text, "no empty value between commas");
  for (std::size_t i = 0; i < sweep.values.size(); ++i) {
    ob::require(valid_value(*sweep.parameter, sweep.values[i]), "--sweep", text, allowed);
    for (std::size_t j = 0; j < i; ++j) {
      const auto a = ob::parse_number(sweep.values[i]), b = ob::parse_number(sweep.values[j]);
      const bool same = sweep.values[i] == sweep.values[j] || (a && b && *a == *b);
      ob::require(!same, "--sweep", text, "each value once (" + sweep.values[i] + " is there twice)");
    }
  }
  return sweep;
}

}  // namespace

const std::vector<std::string>& sweep_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto& parameter : sweep_parameters()) list.push_back(parameter.name);
    return list;
  }();
  return names;
}

void validate(const CLI::App& app, const Config& config) {
  ob::require(!(config.chunks > 0 && (app.count("--bucket-mb") > 0 || app.count("--first-bucket-mb") > 0)),
              "--chunks", std::to_string(config.chunks), "--chunks and --bucket-mb/--first-bucket-mb exclude each other");
  ob::parse_fault(config.fault.inject_fault);
  if (!config.sweep.empty()) {
    const auto sweep = parse_sweep(config.sweep);
    ob::require(!((sweep.parameter->name == "bucket-mb" || sweep.parameter->name == "plan") && config.chunks > 0),
                "--sweep", config.sweep, "a bucket-mb or plan sweep cannot be combined with --chunks");
  }
  ob::require(!(config.plan_mode == "auto" && config.chunks > 0), "--plan", config.plan_mode,
              "--plan auto chooses the buckets: not with --chunks");
  for (const auto& name : ob::split_list(config.plan_syncs)) {
    const bool known = std::any_of(sync_options().begin(), sync_options().end(),
                                   [&](const SyncOption& o) { return o.name == name; });
    ob::require(known && !sharded_sync(name), "--plan-syncs", config.plan_syncs,
                "comma-separated all-reduce strategies: nccl, nccl-sym, ce (sharded ones are not planned)");
  }
  ob::require(config.plan_syncs.empty() || config.plan_mode == "auto" || config.calibrate ||
                  config.sweep.rfind("plan=", 0) == 0,
              "--plan-syncs", config.plan_syncs, "needs --plan auto or --calibrate");
  ob::require(!(config.calibrate && !config.calibration.empty()), "--calibrate", "on",
              "measures a calibration: not with --calibration FILE");
  if (!config.calibration.empty()) {  // its content, here where no GPU is needed (its GPU and ranks: at the run)
    std::ifstream file(config.calibration);
    std::stringstream text;
    text << file.rdbuf();
    ob::require(file.good() || file.eof(), "--calibration", config.calibration, "a readable calibration file");
    Calibration::parse(text.str(), config.calibration);
  }
  ob::require(1.0 * config.batch * config.hidden < 2147483647.0, "--batch", std::to_string(config.batch),
              "batch * hidden must stay below 2^31");
  const bool map = config.mode == "interference";
  ob::require(map || config.interference_mb.empty(), "--interference-mb",
              config.interference_mb.empty() ? "" : ob::format_number(config.interference_mb.front()),
              "needs --mode interference");
  ob::require(map || app.count("--interference-window-ms") == 0, "--interference-window-ms",
              ob::format_number(config.interference_window_ms), "needs --mode interference");
  for (const double mb : config.interference_mb) {
    ob::require(mb <= config.grad_mb(), "--interference-mb", ob::format_number(mb),
                "at most the gradient (" + ob::format_number(config.grad_mb()) + " MiB: --layers x --hidden^2 fp32)");
  }
  ob::require(!map || !(config.common.check || config.calibrate || config.plan_mode == "auto"), "--mode", config.mode,
              "the interference map times loops of one GEMM and one collective: not with --check, --calibrate or "
              "--plan auto");
  for (const auto& point : config.sweep_points()) {
    if (point.chunks == 0) {
      require_bucket_count("--bucket-mb", point.bucket_mb, point.layers, point.hidden);
      require_bucket_count("--first-bucket-mb", point.first_bucket_mb, point.layers, point.hidden);
    }
    // NCCL rejects minCTAs without maxCTAs (seen with 2.28: "invalid argument").
    const std::string min_ctas = std::to_string(point.nccl_min_ctas);
    ob::require(point.nccl_min_ctas == 0 || point.nccl_max_ctas > 0, "--nccl-min-ctas", min_ctas,
                "needs --nccl-max-ctas (or an nccl-max-ctas sweep)");
    ob::require(point.nccl_min_ctas <= point.nccl_max_ctas || point.nccl_max_ctas == 0, "--nccl-min-ctas", min_ctas,
                "at most --nccl-max-ctas (at every point of the sweep)");
    ob::require(1.0 * point.accum_steps * point.batch * point.hidden < 2147483647.0, "--accum-steps",
                std::to_string(point.accum_steps), "accum-steps * batch * hidden must stay below 2^31");
    const SyncOption& sync = *std::find_if(sync_options().begin(), sync_options().end(),
                                           [&](const SyncOption& o) { return o.name == point.sync; });
    ob::require(sync.bf16 || point.comm_dtype == "fp32", "--comm-dtype", point.comm_dtype,
                "--sync " + sync.name + " moves fp32 only");
    ob::require(!sync.sharded || point.accum_steps == 1, "--accum-steps", std::to_string(point.accum_steps),
                "--sync " + sync.name + " runs one micro-step per step");
    ob::require(!sync.sharded || !point.graph, "--graph", "on", "--sync " + sync.name + " does not run under --graph");
    ob::require(point.plan_mode != "auto" || !point.plan_syncs.empty() || !sync.sharded, "--plan", point.plan_mode,
                "--plan auto plans the all-reduce strategies: not --sync " + sync.name);
    ob::require(sync.cta_policy.empty() || point.nccl_cta_policy == "default" ||
                    point.nccl_cta_policy == sync.cta_policy,
                "--nccl-cta-policy", point.nccl_cta_policy,
                "--sync " + sync.name + " needs CTA policy " + sync.cta_policy);
  }
}

std::vector<double> Config::interference_sizes() const {
  if (!interference_mb.empty()) return interference_mb;
  std::vector<double> sizes;
  for (double mb = 1; mb <= grad_mb(); mb *= 2) sizes.push_back(mb);
  if (sizes.empty()) sizes.push_back(grad_mb());
  return sizes;
}

std::vector<ob::Mode> Config::modes() const {
  if (mode == "all") return ob::in_run_order({ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, ob::Mode::kOverlap});
  return {ob::parse_mode(mode)};
}

const std::vector<SyncOption>& sync_options() {
  static const std::vector<SyncOption> options = {
      {"nccl", "in-place ncclAllReduce per bucket (ring kernels on SMs)", "", true},
      {"nccl-sym", "ncclAllReduce on buffers registered as NCCL symmetric windows (symmetric kernels, few CTAs)", "",
       true},
      {"ce", "zero-SM: copy-engine all-to-all + a small sum kernel + copy-engine all-gather on symmetric windows "
             "(CTA policy zero; fp32)",
       "zero", false, false, false},
      {"sharded", "ZeRO-1 style: ncclReduceScatter per bucket in the backward, each rank updates its slices, "
                  "ncclAllGather per layer during the next forward (buckets rounded to whole layers; fp32)",
       "", false, true},
      {"sharded-ce", "sharded on the copy engines: ncclAlltoAll per layer, the slices' sum fused into the update, "
                     "ncclAllGather per layer, on symmetric windows (CTA policy zero; fp32)",
       "zero", false, true, false},
  };
  return options;
}

bool bounded_sync(const std::string& name) {
  for (const auto& option : sync_options()) {
    if (option.name == name) return option.bounded;
  }
  return true;
}

NcclSettings Config::nccl_settings() const {
  std::string policy = nccl_cta_policy;
  for (const auto& option : sync_options()) {
    if (option.name == sync && !option.cta_policy.empty()) policy = option.cta_policy;
  }
  return {nccl_max_ctas, nccl_min_ctas, policy};
}

BucketPlan Config::plan() const {
  if (!plan_ends.empty()) return plan_from_ends(layers, hidden, plan_ends);
  return chunks > 0 ? plan_by_chunks(layers, hidden, chunks) : plan_by_size(layers, hidden, bucket_mb, first_bucket_mb);
}

double Config::grad_mb() const { return 4.0 * layers * hidden * hidden / (1 << 20); }

double Config::device_bytes() const {
  const double w = 1.0 * layers * hidden * hidden, act = 1.0 * batch * hidden;
  // weights, gradients, room for one weight snapshot; activations A_1..A_L; inputs and targets of every
  // micro-batch; dZ, dA; the bf16 copy of the gradient; 64 MiB of headroom.
  double floats = 3.0 * w + layers * act + 2.0 * accum_steps * act + 2.0 * act;
  if (comm_dtype == "bf16") floats += 0.5 * w + (common.check ? w : 0.0);  // --check: an fp32-reduced reference
  if (sync == "ce") floats += 2.0 * w;  // the received slices and the reduced gradient
  if (sync == "sharded") floats += 1.5 * w;  // this rank's reduced slices (at most half), the gathered gradient
  if (sync == "sharded-ce") floats += 2.0 * w;  // the received slices, the gathered gradient
  if (sync != "nccl") floats += w;      // bound_ref: the nccl strategy's gradient for its comm-only run
  double bytes = 4.0 * floats + (64 << 20);
  if (common.check && accum_steps > 1) bytes += accumulation_reference().device_bytes();
  if (common.check && sync != "nccl") bytes += strategy_reference().device_bytes();
  return bytes;
}

std::vector<Config> Config::sweep_points() const {
  if (sweep.empty()) return {*this};
  std::vector<Config> points;
  const auto parsed = parse_sweep(sweep);
  for (const auto& value : parsed.values) {
    Config point = *this;
    point.sweep.clear();
    parsed.parameter->apply(point, value);
    points.push_back(point);
  }
  return points;
}

std::string Config::point_label() const {
  std::string label = plan_mode == "auto"  ? std::string("plan=auto")
                      : chunks > 0    ? "chunks=" + std::to_string(chunks)
                                      : "bucket-mb=" + ob::format_number(bucket_mb);
  if (nccl_max_ctas > 0) label += ", nccl-max-ctas=" + std::to_string(nccl_max_ctas);
  if (nccl_min_ctas > 0) label += ", nccl-min-ctas=" + std::to_string(nccl_min_ctas);
  if (nccl_cta_policy != "default") label += ", nccl-cta-policy=" + nccl_cta_policy;
  if (accum_steps > 1) label += ", accum-steps=" + std::to_string(accum_steps);
  if (comm_dtype != "fp32") label += ", comm-dtype=" + comm_dtype;
  if (graph) label += ", graph";
  if (sync != "nccl") label += ", sync=" + sync;
  if (gemm_sm_margin > 0) label += ", gemm-sm-margin=" + std::to_string(gemm_sm_margin);
  if (prefetch > 0) label += ", prefetch=" + std::to_string(prefetch);
  return label;
}

std::string Config::comm_reference() const { return sharded() ? "sharded" : "nccl"; }

bool sharded_sync(const std::string& name) {
  for (const auto& option : sync_options()) {
    if (option.name == name) return option.sharded;
  }
  return false;
}

bool Config::sharded() const { return sharded_sync(sync); }

std::vector<std::string> Config::planned_syncs() const {
  return plan_syncs.empty() ? std::vector<std::string>{sync} : ob::split_list(plan_syncs);
}

Config Config::strategy_reference() const {
  Config reference = *this;
  reference.sync = "nccl";
  reference.sweep.clear();
  reference.common.check = false;
  return reference;
}

Config Config::accumulation_reference() const {
  Config reference = *this;
  reference.batch = batch * accum_steps;
  reference.accum_steps = 1;
  reference.sweep.clear();
  reference.common.check = false;
  return reference;
}

}  // namespace phase4
