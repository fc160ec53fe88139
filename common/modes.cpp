#include "common/modes.hpp"

#include <algorithm>
#include <stdexcept>

namespace ob {
namespace {

struct Entry {
  std::string name;
  ModeKind kind;
};

std::vector<Entry>& table() {
  static std::vector<Entry> modes = {{"compute", ModeKind::kIsolated}, {"comm", ModeKind::kIsolated},
                                     {"seq", ModeKind::kSequential},   {"overlap", ModeKind::kOverlapped},
                                     {"ideal", ModeKind::kDerived},    {"bound", ModeKind::kDerived},
                                     {"bound_ref", ModeKind::kDerived}};
  return modes;
}

const Entry& entry(Mode mode) {
  const auto& modes = table();
  if (mode.id() < 0 || mode.id() >= static_cast<int>(modes.size())) throw std::logic_error("a mode never registered");
  return modes[mode.id()];
}

}  // namespace

Mode register_mode(const std::string& name, ModeKind kind) {
  auto& modes = table();
  for (std::size_t id = 0; id < modes.size(); ++id) {
    if (modes[id].name != name) continue;
    if (modes[id].kind != kind) throw std::logic_error("mode '" + name + "' registered with two kinds");
    return Mode(static_cast<int>(id));
  }
  modes.push_back({name, kind});
  return Mode(static_cast<int>(modes.size() - 1));
}

const char* mode_name(Mode mode) { return entry(mode).name.c_str(); }

ModeKind mode_kind(Mode mode) { return entry(mode).kind; }

Mode parse_mode(const std::string& name) {
  const auto& modes = table();
  for (std::size_t id = 0; id < modes.size(); ++id) {
    if (modes[id].name == name) return register_mode(name, modes[id].kind);  // the same mode again
  }
  throw std::invalid_argument("unknown mode '" + name + "'");
}

std::vector<Mode> in_run_order(std::vector<Mode> modes) {
  auto rank = [](Mode m) { return std::make_pair(static_cast<int>(mode_kind(m)), m.id()); };
  std::stable_sort(modes.begin(), modes.end(), [&](Mode a, Mode b) { return rank(a) < rank(b); });
  modes.erase(std::unique(modes.begin(), modes.end()), modes.end());
  return modes;
}

}  // namespace ob
