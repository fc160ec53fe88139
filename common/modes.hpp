// The modes a run can report, typed once (DESIGN.md, "Files a run writes"): the measured modes of every phase and
// the derived rows. Code compares Mode values, never names; the name is written only into the CSV and console.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ob {

enum class Mode {
  kCompute,      // the step without communication (T_comp)
  kComm,         // the communication alone (T_comm)
  kSeq,          // compute, then communication (T_seq)
  kOverlap,      // communication overlapped with compute (T_ovl)
  kThread,       // phase 3's overlapped strategies
  kNonblocking,
  kProgress,
  kIdeal,        // derived: max(T_comp, T_comm)
  kBound,        // derived: the schedule bound from the run's own isolated tasks
  kBoundRef,     // derived: the schedule bound from the fastest isolated communication (phase 4)
  kInterference, // phase 4's interference map: a GEMM and a collective, alone and at once, per message size
};

// "compute", "comm", "seq", "overlap", "thread", "nonblocking", "progress", "ideal", "bound", "bound_ref",
// "interference".
const char* mode_name(Mode mode);
// The inverse of mode_name; throws std::invalid_argument naming the text.
Mode parse_mode(const std::string& name);
inline std::ostream& operator<<(std::ostream& out, Mode mode) { return out << mode_name(mode); }
// Modes that overlap communication with compute: they get speedup, efficiency, overlap % and slowdown.
bool is_overlapped(Mode mode);
// Rows computed from other rows rather than measured.
bool is_derived(Mode mode);
// The measured modes a --mode (or --strategy) value selects, in the one run order every phase uses: the isolated
// modes first (compute, comm), then seq, then the overlapped ones, so derived rows always find their inputs.
std::vector<Mode> in_run_order(std::vector<Mode> modes);

}  // namespace ob
