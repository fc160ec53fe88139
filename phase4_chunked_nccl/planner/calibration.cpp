// A calibration file (planner.hpp): written by --calibrate (described from the run, then measured); read and
// checked in calibration_reader.cpp for --calibration, phase4_predict and overlap_bench/planner/predict.py.
#include <unistd.h>

#include <algorithm>

#include "common/csv_writer.hpp"
#include "common/metadata.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {
namespace {

nlohmann::json schedule_to_json(const ScheduleRow& row, const ScheduleCalibration& h) {
  nlohmann::json out = {{"forward_rest_ms", h.forward_rest_ms},
                        {"iteration_ms", h.iteration_ms},
                        {"forward_slowdown", h.forward_slowdown},
                        {"layer_ms", h.layer_ms},
                        {"step_ms", h.step_ms}};
  for (const auto& part : row.parts) {
    out[part.name + "_ms"] = h.part_ms.at(part.name);
    if (part.comm) out[part.name + "_stretch"] = h.stretch.at(part.name);
  }
  return out;
}

}  // namespace

const StrategyCalibration* Calibration::strategy(const std::string& sync) const {
  for (const auto& s : strategies) {
    if (s.sync == sync) return &s;
  }
  return nullptr;
}

nlohmann::json Calibration::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : strategies) {
    list.push_back({{"sync", s.sync},
                    {"bytes", s.bytes},
                    {"comm_ms", s.comm_ms},
                    {"gap_ms", s.gap_ms},
                    {"stretch", s.stretch},
                    {"slowdown", s.slowdown}});
    if (!s.overlap_ms.empty()) list.back()["plan_mb"] = s.plan_mb, list.back()["overlap_ms"] = s.overlap_ms;
    const ScheduleRow& schedule = schedule_of(s.sync);
    // Its schedule's knobs as calibrated: in the schedule's own section where it has parts of its own, else here.
    nlohmann::json* knobs = &list.back();
    if (!schedule.parts.empty()) {
      if (s.schedule.empty()) continue;
      knobs = &(list.back()[schedule.name] = schedule_to_json(schedule, s.schedule));
    }
    for (const Knob& knob : schedule.knobs) (*knobs)[knob.name] = knob_value(s.knobs, knob.name);
  }
  nlohmann::json out = {
      {"kind", "overlap-bench phase4 calibration"},
      {"schema_version", 1},
      {"commit", commit},
      {"host", host},
      {"date_utc", date_utc},
      {"gpu", gpu},
      {"ranks", ranks},
      {"model",
       {{"hidden", hidden},
        {"layers", layers},
        {"batch", batch},
        {"tf32", tf32},
        {"comm_dtype", comm_dtype},
        {"accum_steps", accum_steps},
        {"graph", graph}}},
      {"compute",
       {{"forward_ms", forward_ms}, {"update_ms", update_ms}, {"iteration_ms", iteration_ms}, {"step_ms", step_ms}}},
      {"strategies", list}};
  if (!model.empty()) {  // a transformer's (--model): its name and each backward step's gradient
    out["model"]["name"] = model;
    out["model"]["step_elements"] = step_elements;
  }
  return out;
}

std::string Calibration::mismatch(const Calibration& other) const {
  auto differs = [](const std::string& what, const auto& here, const auto& there) {
    nlohmann::json a = here, b = there;
    return what + " is " + a.dump() + " here but " + b.dump() + " in the calibration";
  };
  if (model != other.model) return differs("the model", other.model, model);
  if (step_elements != other.step_elements) return differs("model.step_elements", other.step_elements, step_elements);
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

std::string Calibration::negative_slowdown() const {
  for (const auto& s : strategies) {
    for (std::size_t i = 0; i < s.slowdown.size(); ++i) {
      if (s.slowdown[i] >= -kSlowdownNoise) continue;
      return "--sync " + s.sync + "'s slowdown is " + ob::format_number(s.slowdown[i], 3) + " at " +
          ob::format_number(s.bytes[i] / (1 << 20), 4) + " MiB buckets, below -" + ob::format_number(kSlowdownNoise) +
          ": its overlapped backward ran faster than its compute-only run, so the predictions from it are too low " +
          "(calibrations before 2e5ca33 divided by another plan's compute-only run; measure it again)";
    }
  }
  return "";
}

Calibration describe_run(const StepSpec& step, int ranks, const std::string& gpu) {
  const ModelSpec& model = step.model;
  Calibration c;
  c.hidden = model.hidden;
  c.layers = model.layers;
  c.batch = model.batch;
  c.accum_steps = model.accum_steps;
  const FamilyRow& family = model.family_row();
  if (family.model_name) {  // a named model: its layout kept in the file
    c.model = family.model_name(model);
    c.step_elements = model.layout().ends;
    for (std::size_t s = c.step_elements.size(); s-- > 1;) c.step_elements[s] -= c.step_elements[s - 1];
  }
  c.ranks = ranks;
  c.tf32 = model.tf32;
  c.graph = step.graph;
  c.comm_dtype = name(step.sync.wire);
  c.gpu = gpu;
  c.commit = ob::build_commit();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  c.host = host;
  c.date_utc = ob::utc_timestamp();
  return c;
}

std::vector<double> calibration_sizes(const ModelSpec& model) {
  const double gradient = model.grad_mb() * (1 << 20);
  std::vector<double> sizes;
  const double smallest = std::max(std::min<double>(1 << 20, gradient / 8), gradient / kMostCalibratedBuckets);
  for (double m = smallest; m < gradient * (1 - 1e-9); m *= 4) sizes.push_back(m);
  sizes.push_back(gradient);
  return sizes;
}

}  // namespace phase4
