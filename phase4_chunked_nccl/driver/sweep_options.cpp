#include "phase4_chunked_nccl/driver/sweep_options.hpp"

#include <cmath>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"

namespace phase4 {
namespace {

int whole(const std::string& text) { return static_cast<int>(*ob::parse_number(text)); }

bool valid_value(const SweepParameter& parameter, const std::string& item) {
  if (parameter.kind == SweepParameter::kStrategy) return find_sync(item) != nullptr;
  if (parameter.kind == SweepParameter::kPlan && (item == "auto" || item == "layer")) return true;
  const auto value = ob::parse_number(item);
  if (!value || *value > parameter.most) return false;
  if (parameter.kind != SweepParameter::kWhole) return *value >= parameter.least;
  return *value >= parameter.least && *value == std::floor(*value);
}

std::string allowed_text() {
  std::string names;
  for (const auto& name : sweep_names()) names += (names.empty() ? "" : ", ") + name;
  return "NAME=V1,V2,... with NAME one of " + names +
         " (whole numbers in each option's range; bucket-mb >= " + ob::format_number(kLeastBucketMb) +
         "; sync: strategy names; plan: auto, layer or a bucket cap)";
}

}  // namespace

const std::vector<SweepParameter>& sweep_parameters() {
  using P = SweepParameter;
  static const std::vector<SweepParameter> table = {
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
      {"prefetch", P::kWhole, 0, 4096,
       "Sharded strategies: all-gathers issued ahead of the forward layer that needs them, in layers (0: every "
       "layer's at the step's start)",
       &Config::prefetch},
      {"sync", P::kStrategy, 0, 0, "", nullptr, [](Config& c, const std::string& v) { c.sync = v; }},
      {"plan", P::kPlan, kLeastBucketMb, kMostBucketMb, "", nullptr,
       [](Config& c, const std::string& v) {
         c.plan_mode = v == "auto" ? PlanMode::kAuto : PlanMode::kCaps;
         c.chunks = v == "layer" ? c.layers : 0;
         if (v != "auto" && v != "layer") c.bucket_mb = c.first_bucket_mb = *ob::parse_number(v);
       }},
  };
  return table;
}

void add_whole_option(CLI::App& app, Config& config, const std::string& name) {
  for (const auto& p : sweep_parameters()) {
    if (p.name != name || p.kind != SweepParameter::kWhole) continue;
    auto* option = app.add_option("--" + name, config.*p.member, p.help)
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
  if (sweep.empty()) return {*this};
  std::vector<Config> points;
  const auto parsed = parse_sweep(sweep);
  for (const auto& value : parsed.values) {
    Config point = *this;
    point.sweep.clear();
    if (parsed.parameter->member) {
      point.*parsed.parameter->member = whole(value);
    } else {
      parsed.parameter->apply(point, value);
    }
    points.push_back(point);
  }
  return points;
}

}  // namespace phase4
