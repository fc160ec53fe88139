#include "phase4_chunked_nccl/config.hpp"

#include <cmath>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"

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
  app.add_option("--mode", config.mode, "seq|overlap|compute|comm|all")
      ->check(CLI::IsMember({"seq", "overlap", "compute", "comm", "all"}))
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
  app.add_flag("--power", config.power, "Sample each GPU's power every 20 ms (NVML) and report energy per iteration");
  app.add_flag("--graph", config.graph, "Capture each mode's step in a CUDA graph and replay it");
  ob::add_fault_options(app, config.fault);
  app.add_option("--sweep", config.sweep,
                 "Run every point in one process: NAME=V1,V2,... with NAME chunks, bucket-mb, nccl-max-ctas, "
                 "nccl-min-ctas or accum-steps");
}

namespace {

// What --sweep can vary: whole numbers up to `most` (bucket-mb: any number > 0), and how a point takes its value.
struct SweepParameter {
  std::string name;
  bool whole;
  double most;
  void (*apply)(Config&, double);
};

const std::vector<SweepParameter>& sweep_parameters() {
  static const std::vector<SweepParameter> table = {
      {"chunks", true, 1 << 24, [](Config& c, double v) { c.chunks = static_cast<int>(v); }},
      {"bucket-mb", false, 1e6,
       [](Config& c, double v) {
         c.chunks = 0;
         c.bucket_mb = v;
       }},
      {"nccl-max-ctas", true, 64, [](Config& c, double v) { c.nccl_max_ctas = static_cast<int>(v); }},
      {"nccl-min-ctas", true, 64, [](Config& c, double v) { c.nccl_min_ctas = static_cast<int>(v); }},
      {"accum-steps", true, 1024, [](Config& c, double v) { c.accum_steps = static_cast<int>(v); }},
  };
  return table;
}

struct Sweep {
  const SweepParameter* parameter = nullptr;
  std::vector<double> values;
};

Sweep parse_sweep(const std::string& text) {
  std::string names;
  for (const auto& name : sweep_names()) names += (names.empty() ? "" : ", ") + name;
  const std::string allowed = "NAME=V1,V2,... with NAME one of " + names + " (whole numbers >= 1; bucket-mb > 0)";
  const auto equals = text.find('=');
  ob::require(equals != std::string::npos, "--sweep", text, allowed);
  Sweep sweep;
  for (const auto& parameter : sweep_parameters()) {
    if (parameter.name == text.substr(0, equals)) sweep.parameter = &parameter;
  }
  ob::require(sweep.parameter != nullptr, "--sweep", text, allowed);
  const auto items = ob::split_list(text.substr(equals + 1));
  ob::require(!items.empty(), "--sweep", text, allowed);
  for (const auto& item : items) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const bool whole = !sweep.parameter->whole || value == std::floor(value);
    ob::require(used == item.size() && std::isfinite(value) && value > 0 && value <= sweep.parameter->most && whole,
                "--sweep", text, allowed);
    sweep.values.push_back(value);
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
    ob::require(!(sweep.parameter->name == "bucket-mb" && config.chunks > 0), "--sweep", config.sweep,
                "a bucket-mb sweep cannot be combined with --chunks");
  }
  ob::require(1.0 * config.batch * config.hidden < 2147483647.0, "--batch", std::to_string(config.batch),
              "batch * hidden must stay below 2^31");
  for (const auto& point : config.sweep_points()) {
    // NCCL rejects minCTAs without maxCTAs (seen with 2.28: "invalid argument").
    const std::string min_ctas = std::to_string(point.nccl_min_ctas);
    ob::require(point.nccl_min_ctas == 0 || point.nccl_max_ctas > 0, "--nccl-min-ctas", min_ctas,
                "needs --nccl-max-ctas (or an nccl-max-ctas sweep)");
    ob::require(point.nccl_min_ctas <= point.nccl_max_ctas || point.nccl_max_ctas == 0, "--nccl-min-ctas", min_ctas,
                "at most --nccl-max-ctas (at every point of the sweep)");
    ob::require(1.0 * point.accum_steps * point.batch * point.hidden < 2147483647.0, "--accum-steps",
                std::to_string(point.accum_steps), "accum-steps * batch * hidden must stay below 2^31");
  }
}

std::vector<std::string> Config::modes() const {
  if (mode == "all") return {"compute", "comm", "seq", "overlap"};
  return {mode};
}

BucketPlan Config::plan() const {
  return chunks > 0 ? plan_by_chunks(layers, hidden, chunks) : plan_by_size(layers, hidden, bucket_mb, first_bucket_mb);
}

double Config::grad_mb() const { return 4.0 * layers * hidden * hidden / (1 << 20); }

double Config::device_bytes() const {
  const double w = 1.0 * layers * hidden * hidden, act = 1.0 * batch * hidden;
  // weights, gradients, room for one weight snapshot; activations A_1..A_L; inputs and targets of every
  // micro-batch; dZ, dA; the bf16 copy of the gradient; 64 MiB of headroom.
  double floats = 3.0 * w + layers * act + 2.0 * accum_steps * act + 2.0 * act;
  if (comm_dtype == "bf16") floats += 0.5 * w + (common.check ? w : 0.0);  // --check: an fp32-reduced reference
  double bytes = 4.0 * floats + (64 << 20);
  if (common.check && accum_steps > 1) bytes += accumulation_reference().device_bytes();
  return bytes;
}

std::vector<Config> Config::sweep_points() const {
  if (sweep.empty()) return {*this};
  std::vector<Config> points;
  const auto parsed = parse_sweep(sweep);
  for (double value : parsed.values) {
    Config point = *this;
    point.sweep.clear();
    parsed.parameter->apply(point, value);
    points.push_back(point);
  }
  return points;
}

std::string Config::point_label() const {
  std::string label = chunks > 0 ? "chunks=" + std::to_string(chunks) : "bucket-mb=" + ob::format_number(bucket_mb);
  if (nccl_max_ctas > 0) label += ", nccl-max-ctas=" + std::to_string(nccl_max_ctas);
  if (nccl_min_ctas > 0) label += ", nccl-min-ctas=" + std::to_string(nccl_min_ctas);
  if (nccl_cta_policy != "default") label += ", nccl-cta-policy=" + nccl_cta_policy;
  if (accum_steps > 1) label += ", accum-steps=" + std::to_string(accum_steps);
  if (comm_dtype != "fp32") label += ", comm-dtype=" + comm_dtype;
  if (graph) label += ", graph";
  return label;
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
