// The modes a run can report, typed once (DESIGN.md, "Files a run writes"): the measured modes every phase shares,
// the derived rows, and the modes a phase adds for itself (register_mode: phase 3's overlapped strategies, phase
// 4's interference map) without editing this file. Code compares Mode values, never names; the name is written only
// into the CSV and the console.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ob {

// How a mode's rows are treated: its place in the one run order and whether it gets the overlap metrics.
enum class ModeKind {
  kIsolated,  // compute, comm: the inputs of every derived row, run first
  kSequential,  // seq
  kOverlapped,  // overlap and a phase's overlapped strategies: speedup, efficiency, overlap %, slowdown
  kDerived,  // ideal, bound, bound_ref: computed from other rows
  kOther,  // a phase's own measurement (phase 4's interference map)
};

class Mode {
 public:
  constexpr Mode() = default;  // seq
  static const Mode kCompute, kComm, kSeq, kOverlap, kIdeal, kBound, kBoundRef;
  constexpr bool operator==(Mode other) const { return id_ == other.id_; }
  constexpr bool operator!=(Mode other) const { return id_ != other.id_; }
  constexpr int id() const { return id_; }

 private:
  constexpr explicit Mode(int id) : id_(id) {}
  friend Mode register_mode(const std::string& name, ModeKind kind);
  int id_ = 2;
};

// The shared modes:  T_comp (the step without communication), T_comm (the communication alone), T_seq (compute,
// then communication), T_ovl (overlapped); derived: max(T_comp, T_comm), the schedule bound from the run's own
// isolated tasks, the same from the fastest isolated communication.
inline constexpr Mode Mode::kCompute{0}, Mode::kComm{1}, Mode::kSeq{2}, Mode::kOverlap{3}, Mode::kIdeal{4},
    Mode::kBound{5}, Mode::kBoundRef{6};

// A phase's own mode, registered once by name (at start-up: a namespace-scope constant of the phase); the same name
// twice gives the same mode, a name of another kind throws std::logic_error.
Mode register_mode(const std::string& name, ModeKind kind);

// "compute", "comm", "seq", "overlap", "ideal", "bound", "bound_ref", or the registered name.
const char* mode_name(Mode mode);
// The inverse of mode_name (registered modes included); throws std::invalid_argument naming the text.
Mode parse_mode(const std::string& name);
inline std::ostream& operator<<(std::ostream& out, Mode mode) { return out << mode_name(mode); }
ModeKind mode_kind(Mode mode);
// Modes that overlap communication with compute: they get speedup, efficiency, overlap % and slowdown.
inline bool is_overlapped(Mode mode) { return mode_kind(mode) == ModeKind::kOverlapped; }
// Rows computed from other rows rather than measured.
inline bool is_derived(Mode mode) { return mode_kind(mode) == ModeKind::kDerived; }
// The measured modes a --mode (or --strategy) value selects, in the one run order every phase uses: the isolated
// modes first (compute, comm), then seq, then the overlapped ones (registration order), so derived rows always find
// their inputs; each once.
std::vector<Mode> in_run_order(std::vector<Mode> modes);

}  // namespace ob
