// A calibration file read (planner.hpp): every value of --calibration's, phase4_predict's and
// overlap_bench/planner/predict.py's file checked, its type, range and lengths, before the planner sees it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {
namespace {

// json[key] as T, or a UsageError naming the file and the key.
template <typename T>
T field(const nlohmann::json& json, const std::string& key, const std::string& where, const std::string& source) {
  if (!json.is_object() || !json.contains(key)) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: missing key '" + where + key + "'");
  }
  const auto& value = json.at(key);
  // A number stays the number it is: nlohmann's get<int> reads 2^32 + 4096 as 4096 and 2.5 as 2, get<double> a
  // string never; a whole number is asked to be one, in T's range.
  bool fits = true;
  if constexpr (std::is_same_v<T, bool>) {
    fits = value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    fits = value.is_number_integer() &&
        (value.is_number_unsigned() ? value.get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<T>::max()}
                                    : value.get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                 value.get<std::int64_t>() <= std::numeric_limits<T>::max());
  } else if constexpr (std::is_floating_point_v<T>) {
    fits = value.is_number();  // a boolean, which nlohmann would read as 0 or 1, is none
  } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>>) {
    fits = value.is_array() &&
        std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number_unsigned(); });
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    fits = value.is_array() && std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number(); });
  }
  if (!fits) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: key '" + where + key + "' has the wrong type (" +
                         value.dump().substr(0, 40) +
                         ": a whole number in range where one is asked, a number never a boolean)");
  }
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: key '" + where + key + "' has the wrong type");
  }
}

// The largest value a calibration may hold (a day in ms, or 1e15 bytes): the model's sums of many such stay finite.
constexpr double kLargestCalibrated = 1e15;
// The most sizes a strategy's calibration holds, and the largest gradient (elements) a calibration's model may have
// (2^40: a 1-trillion-parameter model): the planner's time and memory grow with both.
constexpr std::size_t kMostCalibratedSizes = 1000;
constexpr double kMostGradientElements = 1099511627776.0;

void require_positive(const std::vector<double>& values, const std::string& key, const std::string& source) {
  for (double v : values) {
    if (!(std::isfinite(v) && v > 0 && v <= kLargestCalibrated)) {
      throw ob::UsageError("--calibration: '" + source + "' is invalid: '" + key +
                           "' holds a value that is not in (0, " + ob::format_number(kLargestCalibrated) + "]");
    }
  }
}

// The own step of a strategy whose schedule has parts of its own (`row`; `where` names it in messages): its keys
// the row's parts' (<part>_ms, and <part>_stretch for a comm part); its per-layer lists checked against the layers
// later.
ScheduleCalibration schedule_from_json(const ScheduleRow& row, const nlohmann::json& json, const std::string& where,
                                       const std::string& source) {
  ScheduleCalibration s;
  s.forward_rest_ms = field<double>(json, "forward_rest_ms", where, source);
  s.iteration_ms = field<double>(json, "iteration_ms", where, source);
  s.forward_slowdown = field<double>(json, "forward_slowdown", where, source);
  s.layer_ms = field<std::vector<double>>(json, "layer_ms", where, source);
  s.step_ms = field<std::vector<double>>(json, "step_ms", where, source);
  const auto invalid = [&](const std::string& what) {
    return ob::UsageError("--calibration: '" + source + "' is invalid: " + where + what);
  };
  require_positive(s.layer_ms, where + "layer_ms", source);
  require_positive(s.step_ms, where + "step_ms", source);
  require_positive({s.iteration_ms}, where + "iteration_ms", source);
  std::string lists = "layer_ms";  // "layer_ms, update_ms and gather_ms", for the message
  for (const auto& part : row.parts) lists += (&part == &row.parts.back() ? " and " : ", ") + part.name + "_ms";
  for (const auto& part : row.parts) {
    const std::string key = part.name + "_ms";
    const auto& times = s.part_ms[part.name] = field<std::vector<double>>(json, key, where, source);
    for (double v : times) {
      if (!(v >= 0 && v <= kLargestCalibrated)) throw invalid(key + " must be >= 0");
    }
    if (times.size() != s.layer_ms.size()) throw invalid(lists + " need one time per layer each");
    if (!part.comm) continue;
    s.stretch[part.name] = field<double>(json, part.name + "_stretch", where, source);
    require_positive({s.stretch[part.name]}, where + part.name + "_stretch", source);
  }
  if (!(s.forward_rest_ms >= 0 && s.forward_rest_ms <= kLargestCalibrated))
    throw invalid("forward_rest_ms must be >= 0");
  if (!(s.forward_slowdown > -1 && s.forward_slowdown <= kLargestCalibrated))
    throw invalid("forward_slowdown must be > -1");
  return s;
}

// One entry of a calibration's 'strategies' (`where` names it in messages).
StrategyCalibration strategy_from_json(const nlohmann::json& entry, const std::string& where,
                                       const std::string& source) {
  const auto invalid = [&](const std::string& what) {
    return ob::UsageError("--calibration: '" + source + "' is invalid: " + what);
  };
  StrategyCalibration s;
  s.sync = field<std::string>(entry, "sync", where, source);
  const SyncRow* row = find_sync(s.sync);
  if (!row) throw invalid(where + "sync '" + s.sync + "' is not a strategy of this build (" + sync_list() + ")");
  s.bytes = field<std::vector<double>>(entry, "bytes", where, source);
  s.comm_ms = field<std::vector<double>>(entry, "comm_ms", where, source);
  s.stretch = field<std::vector<double>>(entry, "stretch", where, source);
  // Calibrations made before gap_ms was measured hold none: no gap.
  s.gap_ms = entry.contains("gap_ms") ? field<std::vector<double>>(entry, "gap_ms", where, source)
                                      : std::vector<double>(s.bytes.size(), 0.0);
  s.slowdown = field<std::vector<double>>(entry, "slowdown", where, source);
  const std::size_t n = s.bytes.size();
  if (n > kMostCalibratedSizes) {  // the planner's work grows with the sizes it interpolates between
    throw invalid(where + "bytes holds " + std::to_string(n) + " sizes, at most " +
                  std::to_string(kMostCalibratedSizes) + " are read (a calibration measures a few tens)");
  }
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
  // Calibrations made before the plans' overlapped steps were recorded hold none: no correction.
  if (entry.contains("overlap_ms") || entry.contains("plan_mb")) {
    s.plan_mb = field<std::vector<double>>(entry, "plan_mb", where, source);
    s.overlap_ms = field<std::vector<double>>(entry, "overlap_ms", where, source);
    if (s.plan_mb.size() != n || s.overlap_ms.size() != n)
      throw invalid(where + "plan_mb and overlap_ms need one value a size");
    require_positive(s.plan_mb, where + "plan_mb", source);
    require_positive(s.overlap_ms, where + "overlap_ms", source);
  }
  const ScheduleRow& schedule = schedule_row(row->schedule);  // its own step, under its schedule's name
  // Its schedule's knobs as calibrated: in the schedule's own section where it has parts of its own, else here.
  nlohmann::json knobs = entry;
  std::string knobs_where = where;
  if (!schedule.parts.empty()) {
    knobs = field<nlohmann::json>(entry, schedule.name, where, source);
    knobs_where = where + schedule.name + ".";
    s.schedule = schedule_from_json(schedule, knobs, knobs_where, source);
  }
  for (const Knob& knob : schedule.knobs) {
    const int value = s.knobs[knob.name] = field<int>(knobs, knob.name, knobs_where, source);
    if (value < knob.least) throw invalid(knobs_where + knob.name + " must be >= " + std::to_string(knob.least));
    if (value > knob.most) throw invalid(knobs_where + knob.name + " must be <= " + std::to_string(knob.most));
  }
  return s;
}

// The calibration's "model" section into `c`: its shape and settings, and a named model's steps.
void read_model(Calibration& c, const nlohmann::json& model, const std::string& source) {
  c.hidden = field<int>(model, "hidden", "model.", source);
  c.layers = field<int>(model, "layers", "model.", source);
  c.batch = field<int>(model, "batch", "model.", source);
  c.tf32 = field<bool>(model, "tf32", "model.", source);
  c.comm_dtype = field<std::string>(model, "comm_dtype", "model.", source);
  c.accum_steps = field<int>(model, "accum_steps", "model.", source);
  // Calibrations made before the graph flag was recorded were measured eagerly.
  c.graph = model.contains("graph") ? field<bool>(model, "graph", "model.", source) : false;
  // A transformer's (--model): its name and each backward step's gradient; absent, the square layers.
  c.model = model.contains("name") ? field<std::string>(model, "name", "model.", source) : "";
  if (model.contains("step_elements")) {
    c.step_elements = field<std::vector<std::uint64_t>>(model, "step_elements", "model.", source);
  }
}

}  // namespace

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
  read_model(c, field<nlohmann::json>(json, "model", "", source), source);
  const auto compute = field<nlohmann::json>(json, "compute", "", source);
  c.forward_ms = field<double>(compute, "forward_ms", "compute.", source);
  c.update_ms = field<double>(compute, "update_ms", "compute.", source);
  c.iteration_ms = field<double>(compute, "iteration_ms", "compute.", source);
  c.step_ms = field<std::vector<double>>(compute, "step_ms", "compute.", source);
  for (const auto& [key, value] : {std::pair{"model.hidden", c.hidden},
                                   {"model.layers", c.layers},
                                   {"model.batch", c.batch},
                                   {"model.accum_steps", c.accum_steps},
                                   {"ranks", c.ranks}}) {
    if (value < 1) throw invalid(std::string(key) + " must be >= 1 (it is " + std::to_string(value) + ")");
  }
  if (static_cast<int>(c.step_ms.size()) != c.layers) throw invalid("compute.step_ms needs one time per layer");
  if (!c.step_elements.empty()) {
    if (static_cast<int>(c.step_elements.size()) != c.layers)
      throw invalid("model.step_elements needs one size per layer");
    for (const auto n : c.step_elements) {
      if (n < 1 || n > static_cast<std::uint64_t>(kLargestCalibrated))
        throw invalid("model.step_elements must be >= 1");
    }
  }
  double gradient = c.step_elements.empty() ? 1.0 * c.hidden * (c.hidden + 1.0) * c.layers : 0.0;
  for (const auto n : c.step_elements) gradient += static_cast<double>(n);
  if (gradient > kMostGradientElements) {
    throw invalid("the model's gradient of " + ob::format_number(gradient, 3) + " elements is past the " +
                  ob::format_number(kMostGradientElements, 3) + " a calibration may describe");
  }
  require_positive(c.step_ms, "compute.step_ms", source);
  for (const auto& [key, value] : {std::pair{"compute.forward_ms", c.forward_ms},
                                   {"compute.update_ms", c.update_ms},
                                   {"compute.iteration_ms", c.iteration_ms}}) {
    if (!(value >= 0 && value <= kLargestCalibrated)) throw invalid(std::string(key) + " must be a finite time >= 0");
  }
  const auto list = field<nlohmann::json>(json, "strategies", "", source);
  if (!list.is_array() || list.empty()) {
    throw ob::UsageError("--calibration: '" + source + "' is invalid: 'strategies' lists no strategy");
  }
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string where = "strategies[" + std::to_string(k) + "].";
    StrategyCalibration s = strategy_from_json(list[k], where, source);
    for (const auto& earlier : c.strategies) {
      if (earlier.sync == s.sync) throw invalid(where + "sync '" + s.sync + "' is calibrated twice");
    }
    const auto layers = static_cast<std::size_t>(c.layers);
    if (!s.schedule.empty() && (s.schedule.layer_ms.size() != layers || s.schedule.step_ms.size() != layers)) {
      throw invalid(where + schedule_of(s.sync).name + "'s per-layer lists need one time per layer (" +
                    std::to_string(layers) + ")");
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
}  // namespace phase4
