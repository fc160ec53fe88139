#include "phase4_chunked_nccl/core/schedules.hpp"

#include <utility>

#include "phase4_chunked_nccl/core/registry.hpp"

namespace phase4 {

using Schedules = Registry<ScheduleRow>;

const PartSpec* ScheduleRow::part(const std::string& part_name) const {
  for (const auto& p : parts) {
    if (p.name == part_name) return &p;
  }
  return nullptr;
}

const Knob* ScheduleRow::knob(const std::string& knob_name) const {
  for (const auto& k : knobs) {
    if (k.name == knob_name) return &k;
  }
  return nullptr;
}

RegisterSchedule::RegisterSchedule(ScheduleRow row) {
  const std::string name = row.name;
  Schedules::add("schedules", name, std::move(row));
}

std::vector<std::string> schedule_names() { return Schedules::names(); }

const ScheduleRow& schedule_row(const std::string& name) { return Schedules::get("schedule", name); }

}  // namespace phase4
