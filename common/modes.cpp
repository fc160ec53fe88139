#include "common/modes.hpp"

#include <algorithm>
#include <stdexcept>

namespace ob {
namespace {
constexpr Mode kAll[] = {Mode::kCompute,  Mode::kComm,  Mode::kSeq,   Mode::kOverlap,  Mode::kThread,
                         Mode::kNonblocking, Mode::kProgress, Mode::kIdeal, Mode::kBound, Mode::kBoundRef,
                         Mode::kInterference};
}  // namespace

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kCompute: return "compute";
    case Mode::kComm: return "comm";
    case Mode::kSeq: return "seq";
    case Mode::kOverlap: return "overlap";
    case Mode::kThread: return "thread";
    case Mode::kNonblocking: return "nonblocking";
    case Mode::kProgress: return "progress";
    case Mode::kIdeal: return "ideal";
    case Mode::kBound: return "bound";
    case Mode::kBoundRef: return "bound_ref";
    case Mode::kInterference: return "interference";
  }
  return "?";
}

Mode parse_mode(const std::string& name) {
  for (Mode mode : kAll) {
    if (name == mode_name(mode)) return mode;
  }
  throw std::invalid_argument("unknown mode '" + name + "'");
}

bool is_overlapped(Mode mode) {
  return mode == Mode::kOverlap || mode == Mode::kThread || mode == Mode::kNonblocking ||
         mode == Mode::kProgress;
}

bool is_derived(Mode mode) { return mode == Mode::kIdeal || mode == Mode::kBound || mode == Mode::kBoundRef; }

std::vector<Mode> in_run_order(std::vector<Mode> modes) {
  std::stable_sort(modes.begin(), modes.end(), [](Mode a, Mode b) { return static_cast<int>(a) < static_cast<int>(b); });
  modes.erase(std::unique(modes.begin(), modes.end()), modes.end());
  return modes;
}

}  // namespace ob
