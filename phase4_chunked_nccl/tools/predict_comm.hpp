// phase4_predict's communication at another rank count: the calibrated time per bucket scaled to N ranks within a
// node and across a network between nodes (--links), or a strategy's bucket times measured on N ranks themselves
// (--comm: a comm-only sweep of the target's ranks, METRICS.md "The planner").
#pragma once

#include <string>
#include <vector>

#include "phase4_chunked_nccl/planner/planner.hpp"

namespace phase4 {

// A network between nodes: bandwidth per GPU and latency per hop.
struct Link {
  std::string name;
  double gbps = 0, latency_us = 0;
};

// "ib400", "eth100" or NAME:GB/s:us; a UsageError naming --links otherwise.
Link parse_link(const std::string& text);

// The calibrated strategy's time per bucket on `ranks` ranks, `per_node` to a node joined by `link`.
CommTime scaled_comm(const StrategyCalibration& s, int calibrated_ranks, int ranks, int per_node, const Link& link);

// Whether a strategy runs where ranks span nodes (not those that need the GPUs' peer access).
bool runs_across_nodes(const std::string& sync);

// A strategy's time per bucket measured on `ranks` ranks: SYNC@RANKS:MIB=MS,MIB=MS,... (two sizes at least,
// increasing, each time > 0), linear between the measured sizes as a calibration's. A sharded strategy is refused:
// its communication is calibrated per layer, not per bucket.
struct MeasuredComm {
  std::string sync;
  int ranks = 0;
  StrategyCalibration times;  // its bytes and comm_ms only
};
MeasuredComm parse_measured_comm(const std::string& text);

// The measured times as the model's communication.
CommTime measured_comm(const MeasuredComm& measured);

// The communication of calibration c's strategy `s` on `ranks` ranks: measured there if `measured` holds it; for a
// sharded strategy whose all-reduce twin (SyncRow::scales_as) `measured` and `c` hold, its calibrated time times the
// twin's measured / calibrated time at the same size; else scaled. `used` (may be null): the measured strategy
// whose times it takes, "" where scaled.
CommTime comm_at(const Calibration& c, const StrategyCalibration& s, int ranks, int per_node, const Link& link,
                 const std::vector<MeasuredComm>& measured, std::string* used = nullptr);

}  // namespace phase4
