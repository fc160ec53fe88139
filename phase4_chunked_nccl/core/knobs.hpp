// A part's own whole-number options, declared in its row as google/benchmark's ArgNames()/Ranges() declare a
// benchmark's arguments: name, range, default, help, and what the planner weighs of it. A schedule's row holds its
// knobs (ScheduleRow::knobs, core/schedules.hpp); from those declarations alone the driver builds --NAME, --sweep
// NAME=..., the point's label (", NAME=V" when not the default), the summary's column (the name with '_' for '-',
// declared in schema.json's summary.knobs), the calibration's field and the planner's search. Nothing outside the
// part's own file names its knobs: the specs carry their values by name (KnobValues), and the part reads its own.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace phase4 {

struct Knob {
  std::string name;  // the option's name without "--"
  int least = 0, most = 0;  // its range, both ends allowed
  int fallback = 0;  // its default: the value that asks nothing of it (other schedules' strategies keep it)
  std::string help;
  // The values the planner weighs for a model of `layers` backward steps, each with every candidate plan, keeping
  // the best (null: the calibrated value kept; planner.hpp, choose_plans).
  std::vector<int> (*search)(int layers) = nullptr;
  std::string column() const;  // the summary's column: the name, '_' for '-'
};

// Knob values by name: a configuration's (every registered knob's), a calibrated strategy's (its schedule's).
using KnobValues = std::map<std::string, int>;

// Every registered schedule's knobs, in the summary's column order: those schema.json declares (summary.knobs) in
// its order, then the others by schedule and declaration.
const std::vector<Knob>& all_knobs();
// Every registered knob at its default.
KnobValues default_knobs();
// The knob called `name` (nullptr: none).
const Knob* find_knob(const std::string& name);
// `values`' value of `name`, else that knob's default (std::logic_error: no knob of that name is registered).
int knob_value(const KnobValues& values, const std::string& name);
// The summary's knob columns with `values`' values (every registered knob's, in all_knobs() order).
std::vector<std::pair<std::string, int>> knob_columns(const KnobValues& values);

}  // namespace phase4
