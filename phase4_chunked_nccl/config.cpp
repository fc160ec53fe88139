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
  app.add_option("--sweep", config.sweep,
                 "Run every point in one process: chunks=5,10,20,50, bucket-mb=1,5,25,100 or nccl-max-ctas=2,4,8");
}

namespace {

struct Sweep {
  std::string name;
  std::vector<double> values;
};

Sweep parse_sweep(const std::string& text) {
  const std::string allowed =
      "NAME=V1,V2,... with NAME chunks or nccl-max-ctas (whole numbers >= 1) or bucket-mb (> 0)";
  const auto equals = text.find('=');
  ob::require(equals != std::string::npos, "--sweep", text, allowed);
  Sweep sweep{text.substr(0, equals), {}};
  ob::require(sweep.name == "chunks" || sweep.name == "bucket-mb" || sweep.name == "nccl-max-ctas", "--sweep", text,
              allowed);
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
    const double most = sweep.name == "nccl-max-ctas" ? 64 : (1 << 24);
    const bool whole = sweep.name == "bucket-mb" || (value == std::floor(value) && value <= most);
    ob::require(used == item.size() && std::isfinite(value) && value > 0 && value <= 1e6 && whole, "--sweep", text,
                allowed);
    sweep.values.push_back(value);
  }
  return sweep;
}

}  // namespace

void validate(const CLI::App& app, const Config& config) {
  ob::require(!(config.chunks > 0 && (app.count("--bucket-mb") > 0 || app.count("--first-bucket-mb") > 0)),
              "--chunks", std::to_string(config.chunks), "--chunks and --bucket-mb/--first-bucket-mb exclude each other");
  if (!config.sweep.empty()) {
    const auto sweep = parse_sweep(config.sweep);
    ob::require(!(sweep.name == "bucket-mb" && config.chunks > 0), "--sweep", config.sweep,
                "a bucket-mb sweep cannot be combined with --chunks");
  }
  // NCCL rejects minCTAs without maxCTAs (seen with 2.28: "invalid argument").
  const bool max_swept = config.sweep.rfind("nccl-max-ctas=", 0) == 0;
  ob::require(config.nccl_min_ctas == 0 || config.nccl_max_ctas > 0 || max_swept, "--nccl-min-ctas",
              std::to_string(config.nccl_min_ctas), "needs --nccl-max-ctas (or an nccl-max-ctas sweep)");
  ob::require(config.nccl_min_ctas == 0 || config.nccl_max_ctas == 0 || config.nccl_min_ctas <= config.nccl_max_ctas,
              "--nccl-min-ctas", std::to_string(config.nccl_min_ctas), "at most --nccl-max-ctas");
  if (max_swept && config.nccl_min_ctas > 0) {
    for (const auto& point : config.sweep_points()) {
      ob::require(config.nccl_min_ctas <= point.nccl_max_ctas, "--nccl-min-ctas", std::to_string(config.nccl_min_ctas),
                  "at most every nccl-max-ctas of the sweep");
    }
  }
  ob::require(1.0 * config.batch * config.hidden < 2147483647.0, "--batch", std::to_string(config.batch),
              "batch * hidden must stay below 2^31");
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
  // weights, gradients, room for one weight snapshot; activations A_0..A_L, target, dZ, dA; 64 MiB of headroom.
  return 4.0 * (3.0 * w + (layers + 1.0) * act + 3.0 * act) + (64 << 20);
}

std::vector<Config> Config::sweep_points() const {
  if (sweep.empty()) return {*this};
  std::vector<Config> points;
  const auto parsed = parse_sweep(sweep);
  for (double value : parsed.values) {
    Config point = *this;
    point.sweep.clear();
    if (parsed.name == "chunks") {
      point.chunks = static_cast<int>(value);
    } else if (parsed.name == "nccl-max-ctas") {
      point.nccl_max_ctas = static_cast<int>(value);
    } else {
      point.chunks = 0;
      point.bucket_mb = value;
    }
    points.push_back(point);
  }
  return points;
}

std::string Config::point_label() const {
  std::string label = chunks > 0 ? "chunks=" + std::to_string(chunks) : "bucket-mb=" + ob::format_number(bucket_mb);
  if (nccl_max_ctas > 0) label += ", nccl-max-ctas=" + std::to_string(nccl_max_ctas);
  return label;
}

}  // namespace phase4
