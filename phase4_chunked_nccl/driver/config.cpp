#include "phase4_chunked_nccl/driver/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"

namespace phase4 {

std::vector<double> Config::interference_sizes() const {
  if (!interference_mb.empty()) return interference_mb;
  std::vector<double> sizes;
  for (double mb = 1; mb <= grad_mb(); mb *= 2) sizes.push_back(mb);
  if (sizes.empty()) sizes.push_back(grad_mb());
  return sizes;
}

std::vector<ob::Mode> Config::modes() const {
  switch (mode) {
    case RunMode::kSeq: return {ob::Mode::kSeq};
    case RunMode::kOverlap: return {ob::Mode::kOverlap};
    case RunMode::kCompute: return {ob::Mode::kCompute};
    case RunMode::kComm: return {ob::Mode::kComm};
    case RunMode::kInterference: return {kInterferenceMode};
    case RunMode::kAll: break;
  }
  return ob::in_run_order({ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, ob::Mode::kOverlap});
}

NcclSettings Config::nccl_settings() const {
  const CtaPolicy needed = sync_row(sync).cta_policy;
  return {nccl_max_ctas, nccl_min_ctas, needed == CtaPolicy::kDefault ? nccl_cta_policy : needed};
}

ModelSpec Config::model_spec() const {
  ModelSpec spec;
  spec.family = family;
  spec.hidden = hidden;
  spec.layers = layers;
  spec.batch = batch;
  spec.model = model;
  spec.shape = shape;
  spec.seq = seq;
  spec.micro_batch = micro_batch;
  spec.blocks = blocks;
  spec.accum_steps = accum_steps;
  spec.tf32 = tf32;
  spec.seed = common.seed;
  return spec;
}

SyncSpec Config::sync_spec() const { return {sync, comm_dtype, knobs}; }

StepSpec Config::step_spec() const {
  StepSpec spec;
  spec.model = model_spec();
  spec.sync = sync_spec();
  spec.lr = lr;
  spec.comm_priority = comm_priority;
  spec.gemm_sm_margin = gemm_sm_margin;
  spec.graph = graph;
  spec.warmup = common.warmup;
  spec.iters = common.iters;
  spec.min_time_ms = common.min_time_ms;
  return spec;
}

BucketPlan Config::plan() const {
  const GradientLayout steps = layout();
  if (!plan_ends.empty()) return plan_from_ends(steps, plan_ends);
  if (chunks > 0) return plan_by_chunks(steps, chunks);
  // A transformer's caps are DDP's (whole tensors, as bucket_cap_mb assigns them): cut at the caps, its 295 slices
  // of llama3-8b's 4 blocks hid 2.5 % of their communication, and the step was 1.14x DDP's at 25 MB on 4 x H200.
  return family_row().whole_tensor_caps ? plan_like_ddp(steps, bucket_mb, first_bucket_mb)
                                        : plan_by_size(steps, bucket_mb, first_bucket_mb);
}

double Config::device_bytes() const {
  const double w = static_cast<double>(layout().elements());
  const SyncRow& row = sync_row(sync);
  // weights, room for one weight snapshot, the strategy's buffers (its gradient included); the model's activations,
  // work buffers and data (its family's row); the bf16 copy of the gradient; 64 MiB of headroom.
  double floats = (2.0 + row.buffers) * w + family_row().activation_floats(model_spec());
  if (comm_dtype == WireType::kBf16)
    floats += 0.5 * w + (common.check ? w : 0.0);  // --check: an fp32-reduced reference
  if (comm_reference() != sync) floats += sync_row(comm_reference()).buffers * w;  // bound_ref's comm-only run
  double bytes = 4.0 * floats + (64 << 20);
  if (common.check && accum_steps > 1) bytes += accumulation_reference().device_bytes();
  if (common.check && sync != reference_sync()) bytes += strategy_reference().device_bytes();
  return bytes;
}

std::string Config::shape_label() const {
  return std::to_string(hidden) + "x" + std::to_string(layers) + "x" + std::to_string(batch);
}

std::string Config::point_label() const {
  std::string label = shape_swept ? "shape=" + shape_label() + ", " : std::string();
  label += plan_mode == PlanMode::kAuto ? std::string("plan=auto")
      : chunks > 0                      ? "chunks=" + std::to_string(chunks)
                                        : "bucket-mb=" + ob::format_number(bucket_mb);
  if (nccl_max_ctas > 0) label += ", nccl-max-ctas=" + std::to_string(nccl_max_ctas);
  if (nccl_min_ctas > 0) label += ", nccl-min-ctas=" + std::to_string(nccl_min_ctas);
  if (nccl_cta_policy != CtaPolicy::kDefault) label += ", nccl-cta-policy=" + name(nccl_cta_policy);
  if (accum_steps > 1) label += ", accum-steps=" + std::to_string(accum_steps);
  if (comm_dtype != WireType::kFp32) label += ", comm-dtype=" + name(comm_dtype);
  if (graph) label += ", graph";
  if (sync != reference_sync()) label += ", sync=" + sync;
  if (gemm_sm_margin > 0) label += ", gemm-sm-margin=" + std::to_string(gemm_sm_margin);
  for (const Knob& knob : all_knobs()) {
    const int value = knob_value(knobs, knob.name);
    if (value != knob.fallback) label += ", " + knob.name + "=" + std::to_string(value);
  }
  return label;
}

std::string Config::comm_reference() const {
  const SyncRow& row = sync_row(sync);
  return row.reference.empty() ? row.name : row.reference;
}

const ScheduleRow& Config::schedule() const { return schedule_of(sync); }

std::vector<std::string> Config::planned_syncs() const {
  return plan_syncs.empty() ? std::vector<std::string>{sync} : ob::split_list(plan_syncs);
}

Config Config::strategy_reference() const {
  Config reference = *this;
  reference.sync = reference_sync();
  reference.sweeps.clear();
  reference.common.check = false;
  return reference;
}

Config Config::accumulation_reference() const {
  Config reference = *this;
  reference.batch = batch * accum_steps;
  reference.micro_batch = micro_batch * accum_steps;
  reference.accum_steps = 1;
  reference.sweeps.clear();
  reference.common.check = false;
  return reference;
}

}  // namespace phase4
