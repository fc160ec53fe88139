// A calibration for the planner's tests: a small model of equal layers and one all-reduce strategy, numbers chosen
// so that a schedule can be computed by hand.
#pragma once

#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4::testing {

inline constexpr double kMiB = 1 << 20;

// A model of `layers` layers of hidden 512 (1 MiB of fp32 gradient each): forward 1 ms, every backward step
// `step` ms, update 0.5 ms; one strategy with comm 0.1 ms + 0.2 ms per MiB and 0.01 ms between buckets, measured
// at 1, 4 and 16 MiB.
inline Calibration calibration(int layers, double step = 1.0, double slowdown = 0.1, double stretch = 1.2) {
  Calibration c;
  c.hidden = 512;
  c.layers = layers;
  c.batch = 64;
  c.ranks = 2;
  c.gpu = "NVIDIA H200";
  c.commit = "abc123";
  c.forward_ms = 1.0;
  c.update_ms = 0.5;
  c.step_ms.assign(layers, step);
  c.iteration_ms = 1.0 + 0.5 + layers * step + 0.25;  // 0.25 ms outside the tasks
  StrategyCalibration s;
  s.sync = "nccl";
  for (double mib : {1.0, 4.0, 16.0}) {
    s.bytes.push_back(mib * kMiB);
    s.comm_ms.push_back(0.1 + 0.2 * mib);
    s.gap_ms.push_back(0.01);
    s.stretch.push_back(stretch);
    s.slowdown.push_back(slowdown);
  }
  c.strategies.push_back(s);
  return c;
}

}  // namespace phase4::testing
