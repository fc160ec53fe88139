#include "phase4_chunked_nccl/core/knobs.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/csv_schema.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"

namespace phase4 {
namespace {

// Every registered schedule's knobs, in the order all_knobs() states; two of one name stop the program.
std::vector<Knob> gather_knobs() {
  std::vector<Knob> knobs;
  for (const auto& name : schedule_names()) {
    for (const auto& knob : schedule_row(name).knobs) {
      if (std::find_if(knobs.begin(), knobs.end(), [&](const Knob& k) { return k.name == knob.name; }) != knobs.end()) {
        std::fprintf(stderr, "phase4: two schedules' knobs are called '%s'\n", knob.name.c_str());
        std::abort();
      }
      knobs.push_back(knob);
    }
  }
  const std::vector<std::string> declared = ob::csv_schema_columns("summary", "knobs");
  const auto rank = [&](const Knob& k) {
    return static_cast<std::size_t>(std::find(declared.begin(), declared.end(), k.column()) - declared.begin());
  };
  std::stable_sort(knobs.begin(), knobs.end(), [&](const Knob& a, const Knob& b) { return rank(a) < rank(b); });
  return knobs;
}

}  // namespace

std::string Knob::column() const {
  std::string text = name;
  std::replace(text.begin(), text.end(), '-', '_');
  return text;
}

const std::vector<Knob>& all_knobs() {
  static const std::vector<Knob> knobs = gather_knobs();  // on first use: after every row has registered
  return knobs;
}

KnobValues default_knobs() {
  KnobValues values;
  for (const auto& knob : all_knobs()) values[knob.name] = knob.fallback;
  return values;
}

const Knob* find_knob(const std::string& name) {
  for (const auto& knob : all_knobs()) {
    if (knob.name == name) return &knob;
  }
  return nullptr;
}

int knob_value(const KnobValues& values, const std::string& name) {
  const auto found = values.find(name);
  if (found != values.end()) return found->second;
  const Knob* knob = find_knob(name);
  if (!knob) throw std::logic_error("no registered knob '" + name + "'");
  return knob->fallback;
}

std::vector<std::pair<std::string, int>> knob_columns(const KnobValues& values) {
  std::vector<std::pair<std::string, int>> columns;
  for (const auto& knob : all_knobs()) columns.emplace_back(knob.column(), knob_value(values, knob.name));
  return columns;
}

}  // namespace phase4
