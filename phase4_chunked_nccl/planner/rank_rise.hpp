// How a sharded strategy's calibrated parts rise from the calibration's rank count to another on the same node's
// links, where the rise of its twin's all-reduce (SyncRow::scales_as) is not theirs: the deferred update's memory
// traffic, and the gathers of strategies that gather by one copy from each peer. Ratios: 1 on the calibrated ranks.
#pragma once

#include <string>

#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4 {

// The deferred update of a tensor of n elements, in units of n: memory-bound, its slice of the weights read and
// written (2 / ranks) and its gradient slice read (1 / ranks), or every rank's copy of that slice where the update
// sums them (1: SyncRow::update_sums_ranks, sharded-ce). Scaled as 1 / ranks, sharded-ce's update on 4 GPUs was
// predicted at half its 2-GPU time and measured at 0.75-0.97 of it (results/4xH200/predictions-copies).
double update_rise(const std::string& sync, int calibrated, int ranks);

// A collective of one copy from each peer, of `bytes` in all: the strategy's own reduction line at that size (latency
// a + slope b per byte on the calibrated ranks c: its all-to-all is such copies too) read as a latency of a / (c - 1)
// per copy, paid once per peer, and the bytes' (ranks - 1) / ranks share at its slope. From 2 to 4 H200s it says
// 1.55-1.76x for sharded-ce's gathers of 4-64 MiB, measured 1.57-1.77x; the rise of ce's all-reduce (the twin,
// whose sum does not rise) said 1.42-1.56x, and the steps came out up to 12.5 % and 17 % short in two sessions
// (results/4xH200/predictions-copies). Needs c >= 2.
double copies_rise(const StrategyCalibration& strategy, double bytes, int calibrated, int ranks);

}  // namespace phase4
