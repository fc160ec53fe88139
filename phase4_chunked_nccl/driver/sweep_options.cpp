#include "phase4_chunked_nccl/driver/sweep_options.hpp"

#include <algorithm>
#include <cmath>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"
#include "common/stats.hpp"

namespace phase4 {
namespace {

int whole(const std::string& text) { return static_cast<int>(*ob::parse_number(text)); }

bool valid_value(const SweepParameter& parameter, const std::string& item) {
  if (parameter.kind == SweepParameter::kStrategy) return find_sync(item) != nullptr;
  if (parameter.kind == SweepParameter::kShape) return parse_shape(item).has_value();
  if (parameter.kind == SweepParameter::kPlan && (item == "auto" || item == "layer" || item == "caps")) return true;
  const auto value = ob::parse_number(item);
  if (!value || *value > parameter.most) return false;
  if (parameter.kind != SweepParameter::kWhole) return *value >= parameter.least;
  return *value >= parameter.least && *value == std::floor(*value);
}

std::string allowed_text() {
  return "NAME=V1,V2,... with NAME one of " + ob::join(sweep_names()) +
      " (whole numbers in each option's range; bucket-mb >= " + ob::format_number(kLeastBucketMb) +
      "; sync: strategy names; plan: auto, caps, layer or a bucket cap; shape: HxLxB, hidden x layers x batch)";
}

// The table's own options; the knobs go after gemm-sm-margin (sweep_parameters).
std::vector<SweepParameter> own_parameters() {
  using P = SweepParameter;
  return {
      {"chunks", P::kWhole, 1, 1 << 24, "Cut the gradient into N equal buckets instead (not with --bucket-mb)",
       &Config::chunks, nullptr, false},
      {"bucket-mb", P::kNumber, kLeastBucketMb, kMostBucketMb, "", nullptr,
       [](Config& c, const std::string& v) {
         c.chunks = 0;
         c.bucket_mb = *ob::parse_number(v);
       }},
      {"nccl-max-ctas", P::kWhole, 1, 64, "NCCL's most CTAs per collective (fewer: less contention)",
       &Config::nccl_max_ctas, nullptr, false},
      {"nccl-min-ctas", P::kWhole, 1, 64, "NCCL's fewest CTAs per collective", &Config::nccl_min_ctas, nullptr, false},
      {"accum-steps", P::kWhole, 1, 1024,
       "Micro-steps per step (gradient accumulation; the all-reduces follow the last one's backward)",
       &Config::accum_steps},
      {"gemm-sm-margin", P::kWhole, 0, 1024,
       "SMs the GEMMs leave free for communication (cuBLAS SM-count target: the SMs less this)",
       &Config::gemm_sm_margin},
      {"sync", P::kStrategy, 0, 0, "", nullptr, [](Config& c, const std::string& v) { c.sync = v; }},
      {"plan", P::kPlan, kLeastBucketMb, kMostBucketMb, "", nullptr,
       [](Config& c, const std::string& v) {
         c.plan_mode = v == "auto" ? PlanMode::kAuto : PlanMode::kCaps;
         if (v == "caps") return;  // the plan of --bucket-mb, --first-bucket-mb or --chunks
         c.chunks = v == "layer" ? c.layers : 0;
         if (v != "auto" && v != "layer") c.bucket_mb = c.first_bucket_mb = *ob::parse_number(v);
       }},
      {"shape", P::kShape, 0, 0, "", nullptr,
       [](Config& c, const std::string& v) {
         const Shape shape = *parse_shape(v);
         c.hidden = shape.hidden;
         c.layers = shape.layers;
         c.batch = shape.batch;
         c.shape_swept = true;
       }},
  };
}

}  // namespace

const std::vector<SweepParameter>& sweep_parameters() {
  static const std::vector<SweepParameter> table = [] {
    std::vector<SweepParameter> own = own_parameters(), all;
    for (auto& p : own) {
      all.push_back(std::move(p));
      if (all.back().name != "gemm-sm-margin") continue;
      for (const Knob& knob : all_knobs()) {
        all.push_back({knob.name, SweepParameter::kWhole, static_cast<double>(knob.least),
                       static_cast<double>(knob.most), knob.help});
      }
    }
    return all;
  }();
  return table;
}

std::optional<Shape> parse_shape(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t x = text.find('x');; x = text.find('x', start)) {
    parts.push_back(text.substr(start, x == std::string::npos ? std::string::npos : x - start));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (parts.size() != 3) return std::nullopt;
  const double most[] = {1 << 16, 4096, 1 << 24};  // --hidden, --layers, --batch
  int values[3] = {};
  for (int i = 0; i < 3; ++i) {
    const auto value = ob::parse_number(parts[i]);
    if (!value || *value < 1 || *value > most[i] || *value != std::floor(*value)) return std::nullopt;
    values[i] = static_cast<int>(*value);
  }
  if (1.0 * values[0] * values[2] >= 2147483647.0) return std::nullopt;  // batch * hidden below 2^31, as --batch
  return Shape{values[0], values[1], values[2]};
}

void add_whole_option(CLI::App& app, Config& config, const std::string& name) {
  for (const auto& p : sweep_parameters()) {
    if (p.name != name || p.kind != SweepParameter::kWhole) continue;
    int& value = p.member ? config.*p.member : config.knobs[name];
    auto* option = app.add_option("--" + name, value, p.help)
                       ->check(CLI::Range(static_cast<int>(p.least), static_cast<int>(p.most)));
    if (p.show_default) option->capture_default_str();
    return;
  }
  throw std::logic_error("add_whole_option: no whole-number option " + name);
}

const std::vector<std::string>& sweep_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto& parameter : sweep_parameters()) list.push_back(parameter.name);
    return list;
  }();
  return names;
}

Sweep parse_sweep(const std::string& text) {
  const std::string allowed = allowed_text();
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

std::vector<Config> Config::sweep_points() const {
  Config base = *this;
  base.sweeps.clear();
  std::vector<Config> points = {base};
  for (const auto& text : sweeps) {  // each sweep multiplies the points so far: the first sweep is the outermost
    const auto parsed = parse_sweep(text);
    std::vector<Config> next;
    for (const auto& point : points) {
      for (const auto& value : parsed.values) {
        Config swept = point;
        if (parsed.parameter->kind == SweepParameter::kWhole) {
          (parsed.parameter->member ? swept.*parsed.parameter->member : swept.knobs[parsed.parameter->name]) =
              whole(value);
        } else {
          parsed.parameter->apply(swept, value);
        }
        next.push_back(swept);
      }
    }
    points = std::move(next);
  }
  // A planned point's strategy is the planner's choice among --plan-syncs: a sync sweep does not multiply it.
  std::vector<Config> distinct;
  for (auto& point : points) {
    if (point.plan_mode == PlanMode::kAuto && !point.plan_syncs.empty()) point.sync = point.planned_syncs().front();
    const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                  [&](const Config& p) { return p.point_label() == point.point_label(); });
    if (!seen) distinct.push_back(point);
  }
  return distinct;
}

std::vector<Config> Config::run_order() const {
  const auto points = sweep_points();
  if (!shuffle) return points;
  std::vector<Config> order;
  for (const std::size_t index : ob::shuffled_order(points.size(), order_seed)) order.push_back(points[index]);
  return order;
}

}  // namespace phase4
