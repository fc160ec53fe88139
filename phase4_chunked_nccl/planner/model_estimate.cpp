#include "phase4_chunked_nccl/planner/model_estimate.hpp"

#include <algorithm>

#include <cmath>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {

GemmRates gemm_rates(const Calibration& c) {
  if (!c.step_elements.empty()) {
    throw ob::UsageError(
        "--calibration: a model's estimate needs a calibration of the square-layer model (this one "
        "measured " +
        c.model + "; predict it without --model)");
  }
  if (c.accum_steps != 1) {
    throw ob::UsageError("--calibration: a model's estimate needs a calibration made with --accum-steps 1 (this one: " +
                         std::to_string(c.accum_steps) + "), whose forward time is one forward");
  }
  const double gemm = 2.0 * c.batch * static_cast<double>(c.hidden) * c.hidden;  // one B x H x H GEMM
  double backward_ms = 0;
  for (double ms : c.step_ms) backward_ms += ms;
  // The backward: dW on every layer, dX on all but the first.
  const double backward_flop = gemm * (2.0 * c.layers - 1);
  if (!(c.forward_ms > 0) || !(backward_ms > 0)) {
    throw ob::UsageError("--calibration: a model's estimate needs the calibration's forward and backward times (> 0)");
  }
  return {gemm * c.layers / c.forward_ms, backward_flop / backward_ms};
}

Calibration estimate_model(const Calibration& c, const ModelWork& work) {
  const GemmRates rates = gemm_rates(c);
  const double tokens = static_cast<double>(work.seq) * work.micro_batch;
  const double core = attention_flops_per_token(work.shape, work.seq) * tokens;  // forward, per block
  Calibration e = c;
  e.model = work.shape.name;
  e.compute_estimated = true;
  // A calibration's last size is its whole gradient: one bucket after the backward, overlapping nothing, so its
  // slowdown and stretch are those of no overlap (about 0 and 1). In a larger model a bucket of that size overlaps
  // the backward: it takes those of the largest size measured beside compute.
  const double whole = 4.0 * c.layers * c.hidden * static_cast<double>(c.hidden);
  // A strategy whose schedule has parts of its own (sharded) has its step measured per layer of the calibrated model,
  // which this estimate does not rebuild: it is left out (the others are estimated).
  e.strategies.erase(std::remove_if(e.strategies.begin(), e.strategies.end(),
                                    [](const StrategyCalibration& s) { return !s.schedule.empty(); }),
                     e.strategies.end());
  if (e.strategies.empty()) {
    throw ob::UsageError(
        "--model: the calibration holds only strategies whose schedule times parts of its own per layer (" +
        c.strategies.front().sync + ": " + schedule_of(c.strategies.front().sync).name +
        "), whose step is not estimated for another model: calibrate an all-reduce one too (--plan-syncs nccl,...)");
  }
  for (StrategyCalibration& s : e.strategies) {
    s.plan_mb.clear(), s.overlap_ms.clear();  // the residuals are of the calibrated model's plans, not this one's
    const std::size_t n = s.bytes.size();
    if (n >= 2 && s.bytes.back() >= whole * (1 - 1e-9)) {
      s.slowdown.back() = s.slowdown[n - 2];
      s.stretch.back() = s.stretch[n - 2];
    }
  }
  e.step_ms.clear();
  e.step_elements.clear();
  double forward_flop = 0, parameters = 0;
  for (const ParamTensor& t : parameter_tensors(work.shape, work.blocks)) {
    const double gemm = t.forward_flops_per_token() * tokens;
    // The attention core's backward (dQ, dK from QKᵀ; dP, dV from PV) runs after the output projection's dW and
    // before the V projection's: it delays that step.
    const bool after_core = t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, " attn.v") == 0;
    forward_flop += gemm + (after_core ? core : 0);
    e.step_ms.push_back((2 * gemm + (after_core ? 2 * core : 0)) / rates.backward);
    e.step_elements.push_back(static_cast<std::uint64_t>(t.elements()));
    parameters += static_cast<double>(t.elements());
  }
  // A tied LM head's GEMMs run first in the backward, though its gradient completes last (the embedding's lookup
  // adds to it at the end): their time belongs to the first step.
  if (work.shape.tied && e.step_ms.size() > 1) {
    e.step_ms.front() += e.step_ms.back();
    e.step_ms.back() = 0;
  }
  e.forward_ms = forward_flop / rates.forward;
  e.update_ms = c.update_ms * parameters / (static_cast<double>(c.layers) * c.hidden * c.hidden);
  e.iteration_ms = e.forward_ms + e.update_ms;
  for (double ms : e.step_ms) e.iteration_ms += ms;
  return e;
}

std::vector<std::string> estimate_step_names(const ModelWork& work) {
  std::vector<std::string> names;
  for (const ParamTensor& t : parameter_tensors(work.shape, work.blocks)) names.push_back(t.name);
  return names;
}

}  // namespace phase4
