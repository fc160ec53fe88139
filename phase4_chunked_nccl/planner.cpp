#include "phase4_chunked_nccl/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <unistd.h>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/metadata.hpp"
#include "common/metrics.hpp"
#include "common/options.hpp"

namespace phase4 {
namespace {

constexpr double kBytesPerElement = sizeof(float);  // plans and calibrations count fp32 gradient bytes

// The segment [k, k + 1] of ascending `xs` holding x (the first or last one outside).
std::size_t segment(const std::vector<double>& xs, double x) {
  std::size_t k = 0;
  while (k + 2 < xs.size() && x > xs[k + 1]) ++k;
  return k;
}

// Linear in log2(x), clamped to the calibrated range.
double log_linear(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (xs.size() == 1 || x <= xs.front()) return ys.front();
  if (x >= xs.back()) return ys.back();
  const std::size_t k = segment(xs, x);
  const double t = std::log2(x / xs[k]) / std::log2(xs[k + 1] / xs[k]);
  return ys[k] + (ys[k + 1] - ys[k]) * t;
}

double bucket_bytes(const Bucket& bucket) { return bucket.size() * kBytesPerElement; }

// The pieces' end elements: every layer cut into `pieces` equal parts.
std::vector<std::uint64_t> piece_ends(int layers, int hidden, int pieces) {
  const std::uint64_t layer = static_cast<std::uint64_t>(hidden) * hidden;
  std::vector<std::uint64_t> ends;
  for (int l = 0; l < layers; ++l) {
    for (int p = 1; p <= pieces; ++p) {
      const std::uint64_t end = l * layer + layer * p / pieces;
      if (ends.empty() || end > ends.back()) ends.push_back(end);
    }
  }
  return ends;
}

// The iteration's time outside its measured tasks (launch gaps, events), added back as schedule_bound_ms does.
double overhead_ms(const Calibration& c) {
  double tasks = c.forward_ms + c.update_ms;
  for (double s : c.step_ms) tasks += s;
  return std::max(0.0, c.iteration_ms - tasks);
}

struct Model {
  const Calibration& calibration;
  const StrategyCalibration& strategy;
  const CommTime& comm;
  double isolated_ms(double bytes) const { return comm ? comm(bytes) : strategy.comm_ms_at(bytes); }
  // A bucket's time in the overlapped step: its isolated time stretched as calibrated. The stretch is measured on
  // the comm stream, which is the pipeline's throughput; a strategy whose buckets end on other streams (ce: the sum
  // on the compute stream, the all-gather on its own) has a stretch below 1 there, but nothing follows the last
  // bucket to hide its later stages behind: that one takes at least its isolated time.
  double bucket_ms(double bytes, bool last) const {
    const double stretch = strategy.stretch_at(bytes);
    return isolated_ms(bytes) * (last ? std::max(1.0, stretch) : stretch) + strategy.gap_ms_at(bytes);
  }
};

// The plan of least predicted step for a fixed backward slowdown: f[j], the least finish time of the bucket ending
// at piece j, is min over i < j of max(f[i], ready(j)) + bucket(i, j); any plan's later buckets only depend on that
// finish time, and monotonically, so the minimum composes. Among plans of equal finish (a compute-bound step: the
// last bucket decides), the one whose buckets slow the backward least (their isolated time times the slowdown of
// their size, summed) is kept: an additive tie-break, which composes too.
BucketPlan best_for_slowdown(const Model& model, double slowdown) {
  const Calibration& c = model.calibration;
  const std::uint64_t layer = static_cast<std::uint64_t>(c.hidden) * c.hidden;
  const auto ends = piece_ends(c.layers, c.hidden, pieces_per_layer(c.layers));
  std::vector<double> ready(c.layers);  // compute clock at the end of each backward step
  double clock = c.forward_ms;
  for (int s = 0; s < c.layers; ++s) ready[s] = clock += c.step_ms[s] * (1 + slowdown);
  const std::size_t n = ends.size();
  std::vector<double> finish(n + 1, std::numeric_limits<double>::infinity()), slowing(n + 1, 0);
  std::vector<std::size_t> from(n + 1, 0);
  finish[0] = 0;
  auto end_of = [&](std::size_t j) { return j == 0 ? std::uint64_t{0} : ends[j - 1]; };
  for (std::size_t j = 1; j <= n; ++j) {
    const double ready_j = ready[(end_of(j) - 1) / layer];
    for (std::size_t i = 0; i < j; ++i) {
      const double bytes = (end_of(j) - end_of(i)) * kBytesPerElement;
      const double t = std::max(finish[i], ready_j) + model.bucket_ms(bytes, j == n);
      const double slows = slowing[i] + model.isolated_ms(bytes) * model.strategy.slowdown_at(bytes);
      const double tie = 1e-9 * std::max(1.0, t);
      if (t < finish[j] - tie || (t <= finish[j] + tie && slows < slowing[j])) {
        finish[j] = std::min(finish[j], t), slowing[j] = slows, from[j] = i;
      }
    }
  }
  std::vector<std::uint64_t> chosen;
  for (std::size_t j = n; j > 0; j = from[j]) chosen.push_back(end_of(j));
  std::reverse(chosen.begin(), chosen.end());
  return plan_from_ends(c.layers, c.hidden, chosen);
}

Prediction predict_with(const Model& model, const BucketPlan& plan) {
  const Calibration& c = model.calibration;
  Prediction prediction;
  double weighted = 0, total = 0;
  std::vector<double> comm_ms;
  std::vector<int> ready;
  const double low = model.strategy.bytes.front(), high = model.strategy.bytes.back();
  for (const Bucket& bucket : plan.buckets) {
    const double bytes = bucket_bytes(bucket);
    const double isolated = model.isolated_ms(bytes);
    weighted += isolated * model.strategy.slowdown_at(bytes);
    total += isolated;
    comm_ms.push_back(model.bucket_ms(bytes, &bucket == &plan.buckets.back()));
    ready.push_back(bucket.ready_after);
    prediction.extrapolated = prediction.extrapolated || bytes < low * (1 - 1e-9) || bytes > high * (1 + 1e-9);
  }
  prediction.slowdown = total > 0 ? weighted / total : 0;
  std::vector<double> steps = c.step_ms;
  for (double& s : steps) s *= 1 + prediction.slowdown;
  prediction.step_ms =
      c.forward_ms + ob::pipeline_bound_ms(steps, comm_ms, ready) + c.update_ms + overhead_ms(c);
  return prediction;
}

bool same_plan(const BucketPlan& a, const BucketPlan& b) {
  if (a.buckets.size() != b.buckets.size()) return false;
  for (std::size_t k = 0; k < a.buckets.size(); ++k) {
    if (a.buckets[k].end != b.buckets[k].end) return false;
  }
  return true;
}

// json[key] as T, or a UsageError naming the file and the key.
template <typename T>
T field(const nlohmann::json& json, const std::string& key, const std::string& where, const std::string& source) {
  if (!json.is_object() || !json.contains(key)) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: missing key '" + where + key + "'");
  }
  try {
    return json.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: key '" + where + key + "' has the wrong type");
  }
}

// The largest value a calibration may hold (a day in ms, or 1e15 bytes): the model's sums of many such stay finite.
constexpr double kLargestCalibrated = 1e15;

void require_positive(const std::vector<double>& values, const std::string& key, const std::string& source) {
  for (double v : values) {
    if (!(std::isfinite(v) && v > 0 && v <= kLargestCalibrated)) {
      throw ob::UsageError("--calibration: '" + source + "' is invalid: '" + key + "' holds a value that is not in (0, " +
                           ob::format_number(kLargestCalibrated) + "]");
    }
  }
}

}  // namespace

const std::vector<double> kCandidateCapsMb = {1, 2, 5, 10, 25, 50, 64, 100, 128, 256, 512, 1024};

std::pair<double, double> StrategyCalibration::comm_line_at(double m) const {
  if (bytes.size() == 1) return {0.0, comm_ms[0] / bytes[0]};
  const std::size_t k = segment(bytes, m);
  const double slope = (comm_ms[k + 1] - comm_ms[k]) / (bytes[k + 1] - bytes[k]);
  return {comm_ms[k] - slope * bytes[k], slope};
}

double StrategyCalibration::comm_ms_at(double m, bool* extrapolated) const {
  if (extrapolated) *extrapolated = m < bytes.front() || m > bytes.back();
  const auto [intercept, slope] = comm_line_at(m);
  return std::max(0.0, intercept + slope * m);
}

double StrategyCalibration::gap_ms_at(double m) const { return log_linear(bytes, gap_ms, m); }
double StrategyCalibration::stretch_at(double m) const { return log_linear(bytes, stretch, m); }
double StrategyCalibration::slowdown_at(double m) const { return log_linear(bytes, slowdown, m); }

const StrategyCalibration* Calibration::strategy(const std::string& sync) const {
  for (const auto& s : strategies) {
    if (s.sync == sync) return &s;
  }
  return nullptr;
}

nlohmann::json Calibration::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : strategies) {
    list.push_back({{"sync", s.sync}, {"bytes", s.bytes}, {"comm_ms", s.comm_ms}, {"gap_ms", s.gap_ms}, {"stretch", s.stretch},
                    {"slowdown", s.slowdown}});
  }
  return {{"kind", "overlap-bench phase4 calibration"},
          {"schema_version", 1},
          {"commit", commit},
          {"host", host},
          {"date_utc", date_utc},
          {"gpu", gpu},
          {"ranks", ranks},
          {"model",
           {{"hidden", hidden}, {"layers", layers}, {"batch", batch}, {"tf32", tf32}, {"comm_dtype", comm_dtype},
            {"accum_steps", accum_steps}, {"graph", graph}}},
          {"compute",
           {{"forward_ms", forward_ms}, {"update_ms", update_ms}, {"iteration_ms", iteration_ms},
            {"step_ms", step_ms}}},
          {"strategies", list}};
}

Calibration Calibration::from_json(const nlohmann::json& json, const std::string& source) {
  if (field<std::string>(json, "kind", "", source) != "overlap-bench phase4 calibration") {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: not a phase 4 calibration");
  }
  const auto invalid = [&](const std::string& what) {
    return ob::UsageError("--calibration: '" + source + "' is invalid: " + what);
  };
  const int version = field<int>(json, "schema_version", "", source);
  if (version != 1) throw invalid("schema_version " + std::to_string(version) + " is not one this build reads (1)");
  Calibration c;
  c.commit = field<std::string>(json, "commit", "", source);
  c.host = field<std::string>(json, "host", "", source);
  c.date_utc = field<std::string>(json, "date_utc", "", source);
  c.gpu = field<std::string>(json, "gpu", "", source);
  c.ranks = field<int>(json, "ranks", "", source);
  const auto model = field<nlohmann::json>(json, "model", "", source);
  c.hidden = field<int>(model, "hidden", "model.", source);
  c.layers = field<int>(model, "layers", "model.", source);
  c.batch = field<int>(model, "batch", "model.", source);
  c.tf32 = field<bool>(model, "tf32", "model.", source);
  c.comm_dtype = field<std::string>(model, "comm_dtype", "model.", source);
  c.accum_steps = field<int>(model, "accum_steps", "model.", source);
  // Calibrations made before the graph flag was recorded were measured eagerly.
  c.graph = model.contains("graph") ? field<bool>(model, "graph", "model.", source) : false;
  const auto compute = field<nlohmann::json>(json, "compute", "", source);
  c.forward_ms = field<double>(compute, "forward_ms", "compute.", source);
  c.update_ms = field<double>(compute, "update_ms", "compute.", source);
  c.iteration_ms = field<double>(compute, "iteration_ms", "compute.", source);
  c.step_ms = field<std::vector<double>>(compute, "step_ms", "compute.", source);
  for (const auto& [key, value] : {std::pair{"model.hidden", c.hidden}, {"model.layers", c.layers},
                                    {"model.batch", c.batch}, {"model.accum_steps", c.accum_steps}, {"ranks", c.ranks}}) {
    if (value < 1) throw invalid(std::string(key) + " must be >= 1 (it is " + std::to_string(value) + ")");
  }
  if (static_cast<int>(c.step_ms.size()) != c.layers) throw invalid("compute.step_ms needs one time per layer");
  require_positive(c.step_ms, "compute.step_ms", source);
  for (const auto& [key, value] : {std::pair{"compute.forward_ms", c.forward_ms}, {"compute.update_ms", c.update_ms},
                                    {"compute.iteration_ms", c.iteration_ms}}) {
    if (!(value >= 0 && value <= kLargestCalibrated)) throw invalid(std::string(key) + " must be a finite time >= 0");
  }
  const auto list = field<nlohmann::json>(json, "strategies", "", source);
  if (!list.is_array() || list.empty()) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: 'strategies' lists no strategy");
  }
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string where = "strategies[" + std::to_string(k) + "].";
    StrategyCalibration s;
    s.sync = field<std::string>(list[k], "sync", where, source);
    if (!std::any_of(sync_options().begin(), sync_options().end(),
                     [&](const SyncOption& o) { return o.name == s.sync && !o.sharded; })) {
      throw invalid(where + "sync '" + s.sync + "' is not an all-reduce strategy (nccl, nccl-sym, ce)");
    }
    for (const auto& earlier : c.strategies) {
      if (earlier.sync == s.sync) throw invalid(where + "sync '" + s.sync + "' is calibrated twice");
    }
    s.bytes = field<std::vector<double>>(list[k], "bytes", where, source);
    s.comm_ms = field<std::vector<double>>(list[k], "comm_ms", where, source);
    s.stretch = field<std::vector<double>>(list[k], "stretch", where, source);
    // Calibrations made before gap_ms was measured hold none: no gap.
    s.gap_ms = list[k].contains("gap_ms") ? field<std::vector<double>>(list[k], "gap_ms", where, source)
                                          : std::vector<double>(s.bytes.size(), 0.0);
    s.slowdown = field<std::vector<double>>(list[k], "slowdown", where, source);
    const std::size_t n = s.bytes.size();
    if (n == 0 || s.comm_ms.size() != n || s.gap_ms.size() != n || s.stretch.size() != n || s.slowdown.size() != n ||
        !std::is_sorted(s.bytes.begin(), s.bytes.end()) ||
        std::adjacent_find(s.bytes.begin(), s.bytes.end()) != s.bytes.end()) {
      throw ob::UsageError("--calibration: '" + source + "' is invalid: " + where +
                           "bytes must ascend, with one comm_ms, gap_ms, stretch and slowdown each");
    }
    require_positive(s.bytes, where + "bytes", source);
    require_positive(s.comm_ms, where + "comm_ms", source);
    require_positive(s.stretch, where + "stretch", source);
    for (double v : s.gap_ms) {
      if (!(v >= 0 && v <= kLargestCalibrated)) {
        throw ob::UsageError("--calibration: '" + source + "' is invalid: " + where + "gap_ms must be >= 0");
      }
    }
    for (double v : s.slowdown) {
      if (!(v > -1 && v <= kLargestCalibrated)) {
        throw ob::UsageError("--calibration: '" + source + "' is invalid: " + where + "slowdown must be > -1");
      }
    }
    c.strategies.push_back(s);
  }
  return c;
}

Calibration Calibration::parse(const std::string& text, const std::string& source) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  ob::require(!json.is_discarded(), "--calibration", source, "not JSON");
  return from_json(json, source);
}

std::string Calibration::mismatch(const Calibration& other) const {
  auto differs = [](const std::string& what, const auto& here, const auto& there) {
    nlohmann::json a = here, b = there;
    return what + " is " + a.dump() + " here but " + b.dump() + " in the calibration";
  };
  if (hidden != other.hidden) return differs("hidden", other.hidden, hidden);
  if (layers != other.layers) return differs("layers", other.layers, layers);
  if (batch != other.batch) return differs("batch", other.batch, batch);
  if (tf32 != other.tf32) return differs("tf32", other.tf32, tf32);
  if (comm_dtype != other.comm_dtype) return differs("comm_dtype", other.comm_dtype, comm_dtype);
  if (accum_steps != other.accum_steps) return differs("accum_steps", other.accum_steps, accum_steps);
  if (graph != other.graph) return differs("graph", other.graph, graph);
  if (ranks != other.ranks) return differs("the rank count", other.ranks, ranks);
  if (gpu != other.gpu) return differs("the GPU", other.gpu, gpu);
  if (commit != other.commit) return differs("the commit", other.commit, commit);
  return "";
}

Calibration describe_run(const Config& config, int ranks, const std::string& gpu) {
  Calibration c;
  c.hidden = config.hidden;
  c.layers = config.layers;
  c.batch = config.batch;
  c.accum_steps = config.accum_steps;
  c.ranks = ranks;
  c.tf32 = config.tf32;
  c.graph = config.graph;
  c.comm_dtype = config.comm_dtype;
  c.gpu = gpu;
  c.commit = ob::build_commit();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  c.host = host;
  c.date_utc = ob::utc_timestamp();
  return c;
}

std::vector<double> calibration_sizes(const Config& config) {
  const double gradient = config.grad_mb() * (1 << 20);
  std::vector<double> sizes;
  for (double m = std::min<double>(1 << 20, gradient / 8); m < gradient * (1 - 1e-9); m *= 4) sizes.push_back(m);
  sizes.push_back(gradient);
  return sizes;
}

Prediction predict(const Calibration& calibration, const StrategyCalibration& strategy, const BucketPlan& plan,
                   const CommTime& comm) {
  return predict_with(Model{calibration, strategy, comm}, plan);
}

int pieces_per_layer(int layers) { return std::max(1, std::min(8, 512 / std::max(1, layers))); }

std::vector<PlanChoice> choose_plans(const Calibration& calibration, const std::vector<std::string>& syncs,
                                     const CommTime& comm) {
  std::vector<PlanChoice> choices;
  for (const auto& strategy : calibration.strategies) {
    if (!syncs.empty() && std::find(syncs.begin(), syncs.end(), strategy.sync) == syncs.end()) continue;
    const Model model{calibration, strategy, comm};
    PlanChoice best{strategy.sync, {}, {}};
    best.prediction.step_ms = std::numeric_limits<double>::infinity();
    auto consider = [&](const BucketPlan& plan) {
      const Prediction prediction = predict_with(model, plan);
      if (prediction.step_ms < best.prediction.step_ms) best = {strategy.sync, plan, prediction};
      return prediction;
    };
    // A plan's slowdown lies between the calibrated extremes: the programme at slowdowns across that range, then
    // from the best plan's own slowdown until the plan repeats.
    const auto [low, high] = std::minmax_element(strategy.slowdown.begin(), strategy.slowdown.end());
    constexpr int kGrid = 16;
    for (int k = 0; k <= kGrid; ++k) consider(best_for_slowdown(model, *low + (*high - *low) * k / kGrid));
    BucketPlan previous = best.plan;
    for (int round = 0; round < 8; ++round) {
      BucketPlan plan = best_for_slowdown(model, best.prediction.slowdown);
      consider(plan);
      if (same_plan(plan, previous)) break;
      previous = std::move(plan);
    }
    // Where the slowdown grows with bucket size, a plan of small buckets may beat every programme's plan (each
    // assumed one slowdown for all): the equal and DDP-style plans of the usual caps are candidates too.
    for (double mb : kCandidateCapsMb) {
      consider(plan_by_size(calibration.layers, calibration.hidden, mb, mb));
      consider(plan_by_size(calibration.layers, calibration.hidden, mb, 1.0));
    }
    choices.push_back(best);
  }
  std::stable_sort(choices.begin(), choices.end(), [](const PlanChoice& a, const PlanChoice& b) {
    return a.prediction.step_ms < b.prediction.step_ms;
  });
  return choices;
}

}  // namespace phase4
