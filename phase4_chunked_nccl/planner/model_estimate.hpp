// The planner on a transformer before phase 4 has run it (METRICS.md, "The planner", "A model's estimate"): a
// calibration measured on phase 4's equal-layer model gives the GPU's GEMM rate (forward and backward separately) and
// every strategy's communication; a transformer's shapes (transformer.hpp) give the work. The estimate keeps the
// communication as calibrated and puts each backward step (one per gradient tensor, in backward order) at its GEMMs'
// flops over the calibrated backward rate: dW and dX of every projection, the attention core's four batched GEMMs
// ahead of the block's V projection, a tied LM head's in the first step (its gradient completes last), nothing for
// lookups, norms and activations; a bucket of the calibrated model's
// whole gradient (measured alone after the backward, overlapping nothing) gets the slowdown and stretch of the
// largest size measured beside compute. It is an estimate, and every output that uses it says so
// (`compute_estimated`).
#pragma once

#include "phase4_chunked_nccl/core/transformer.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4 {

struct ModelWork {
  TransformerShape shape;
  int blocks = 0;  // the first N blocks (0: all)
  int seq = 2048, micro_batch = 1;
};

// The calibration's GEMM rates (flop per ms) on its own model: the forward's, and the backward steps' (dW and dX).
struct GemmRates {
  double forward = 0, backward = 0;
};
// Throws ob::UsageError (naming --calibration) for a calibration it cannot take rates from (accumulation micro-steps,
// no compute time).
GemmRates gemm_rates(const Calibration& calibration);

// `calibration`'s communication with `work`'s compute estimated at its GEMM rates: step_ms and step_elements per
// gradient tensor (parameter_tensors order), forward_ms, update_ms scaled by the parameter count, no overhead.
Calibration estimate_model(const Calibration& calibration, const ModelWork& work);

// Each backward step's name in the estimate (the tensor's, as parameter_tensors gives it).
std::vector<std::string> estimate_step_names(const ModelWork& work);

}  // namespace phase4
