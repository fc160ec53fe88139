// Phase 4's plain specs (DESIGN.md, "Phase 4 in rooms"): what the rooms below the driver are given. The driver
// alone owns Config (the options); it resolves a configuration into these (Config::model_spec(), sync_spec(),
// step_spec()), and model/, sync/, schedule/ and planner/ see nothing else of it.
#pragma once

#include <cstdint>
#include <string>

#include "phase4_chunked_nccl/core/bucket_plan.hpp"
#include "phase4_chunked_nccl/core/choices.hpp"
#include "phase4_chunked_nccl/core/families.hpp"
#include "phase4_chunked_nccl/core/knobs.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"

namespace phase4 {

// The model names its family's row (core/families.hpp): phase 4's MLP ("mlp", model/mlp.cpp) of `layers` square
// layers of width `hidden` on `batch` rows, or a transformer ("transformer", model/transformer.cpp) of `model`'s
// `shape` (its first `blocks` blocks, 0: all) on `seq` x `micro_batch` tokens, whose `layers` are its backward steps
// (one per tensor with a gradient); or any other registered family.
// The specs carry no option defaults: the driver's Config holds those and fills every field.
struct ModelSpec {
  std::string family = kDefaultFamily;
  int hidden = 0, layers = 0, batch = 0;  // batch: rows (tokens) per rank and micro-step
  std::string model;  // a named model's source (--model: a preset or a config.json)
  TransformerShape shape;  // the transformer family's, read from `model`
  int seq = 0, micro_batch = 1, blocks = 0;
  int accum_steps = 1;  // micro-steps per step, gradients accumulating
  bool tf32 = false;
  std::uint64_t seed = 0;  // weights and data (the same weights on every rank)

  const FamilyRow& family_row() const { return phase4::family_row(family); }
  GradientLayout layout() const { return family_row().layout(*this); }  // the backward steps' gradient ranges
  double grad_mb() const;  // the fp32 gradient in MiB
};

// How buckets are synchronised: a registered strategy (sync/registry.hpp) and what it is asked to do.
struct SyncSpec {
  std::string strategy;
  WireType wire = WireType::kFp32;  // the type the gradient travels in
  KnobValues knobs;  // the schedules' own options by name (core/knobs.hpp; one not given: its default)
  int knob(const std::string& name) const { return knob_value(knobs, name); }
};

// One training step as the trainer runs it.
struct StepSpec {
  ModelSpec model;
  SyncSpec sync;
  float lr = 0;
  StreamPriority comm_priority = StreamPriority::kNormal;  // the comm stream's
  int gemm_sm_margin = 0;  // SMs the GEMMs leave to communication
  bool graph = false;  // each step replayed as one captured CUDA graph
  int warmup = 0, iters = 0;  // timed runs: untimed steps first, then timed ones
  double min_time_ms = 0;  // > 0: timed steps beyond iters to fill it (common/iteration.hpp)
};

}  // namespace phase4
