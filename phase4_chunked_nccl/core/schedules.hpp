// The schedules, as the strategies (sync/registry.hpp): each a row in its own file under schedule/ that registers
// itself at start-up (a RegisterSchedule object), so adding one is one new file and no edit elsewhere. A row says
// everything the rest of phase 4 needs to know without running it: its name, the parts it times of its own beyond
// the step's common ones (the trainer marks them, the breakdown and the calibration time them, the bound and the
// planner's model read them by name), its own options (knobs, core/knobs.hpp: the driver builds their options,
// sweeps, labels, columns, calibration fields and the planner's search from them), whether its strategies' buckets
// hold whole tensors, its bound, the planner's model of its step before the backward, and the factory that makes it.
// A build without CUDA has the rows with no factory: the options, the planner and phase4_predict know every schedule. The driver, the calibration, the planner
// and the tools ask the row; none compares a schedule's name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "phase4_chunked_nccl/core/bucket_plan.hpp"
#include "phase4_chunked_nccl/core/knobs.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"

namespace phase4 {

// A part a schedule times of its own, one per forward layer: on the compute stream (timed in the compute-only run)
// or on the comm stream (in the comm-only run: the collective's own time), drawn in the timeline as `op` ("": not
// drawn). The calibration keeps its per-layer times as `<name>_ms` and, on the comm stream, its stretch under overlap
// as `<name>_stretch`. `rank_share`: compute on the rank's slice of the weights, which on other rank counts scales
// as the strategy's update does (planner/rank_rise.hpp, update_rise).
struct PartSpec {
  std::string name;
  bool comm = false;
  bool rank_share = false;
  std::string op;
};

using PartTimes = std::map<std::string, std::vector<double>>;  // a schedule's own parts, per forward layer, by name

// What a schedule's bound is made of: the slowest rank's medians of the compute-only run's parts and of the
// communication's tasks (comm-only run), and the two runs' step times.
struct MeasuredParts {
  double forward_ms = 0, update_ms = 0;  // the forward (from the step's start), the update
  std::vector<double> backward_ms;  // per backward step
  std::vector<double> layer_ms;  // per forward layer
  std::vector<double> bucket_ms;  // per bucket
  std::vector<int> ready_after;  // per bucket: the backward step completing it
  PartTimes part_ms;  // the schedule's own parts (ScheduleRow::parts): compute ones from the compute-only run
  double t_comp = 0, t_comm = 0;
};

// A schedule with parts of its own, as calibrated (planner.hpp; empty for one without): its compute-only run's forward
// layers, backward steps, forward's rest and iteration, its parts (the compute ones from that run, the comm ones from
// the comm-only run), under overlap each comm part's stretch and the forward layers' slowdown. (The values of the
// schedule's knobs it ran with are the strategy's: StrategyCalibration::knobs, planner.hpp.)
struct ScheduleCalibration {
  double forward_rest_ms = 0, iteration_ms = 0, forward_slowdown = 0;
  std::vector<double> layer_ms, step_ms;
  PartTimes part_ms;
  std::map<std::string, double> stretch;  // per comm part
  bool empty() const { return layer_ms.empty(); }
};

// What the planner knows of a step it predicts for a schedule that models its whole step (ScheduleRow::planned): the
// compute-only forward and update of the whole gradient (the all-reduce schedule's), each backward step and each of
// `plan`'s buckets as they take under overlap, on `layout`.
struct PlannedStep {
  double forward_ms = 0, update_ms = 0;
  std::vector<double> backward_ms, bucket_ms;
  GradientLayout layout;
  BucketPlan plan;
};

class GradientSync;
class Schedule;
struct StepResources;
using ScheduleFactory = std::unique_ptr<Schedule> (*)(const StepResources& resources, GradientSync& sync);

struct ScheduleRow {
  using Bound = double (*)(const MeasuredParts& parts, const SyncSpec& sync);
  ScheduleRow() = default;
  // The row of `row_name`: its help, its bound and its factory; the rest set after where it has them.
  ScheduleRow(std::string row_name, std::string row_help, Bound row_bound, ScheduleFactory row_make)
      : name(std::move(row_name)), help(std::move(row_help)), bound(row_bound), make(row_make) {}

  std::string name, help;
  std::vector<PartSpec> parts;  // its own timed parts (none: the step's common ones only)
  // Its own whole-number options (core/knobs.hpp; SyncSpec::knob reads their values), which other schedules'
  // strategies would ignore: set other than its default in a run with none of its strategies, one is refused.
  std::vector<Knob> knobs;
  bool whole_tensors = false;  // its strategies' buckets hold whole tensors (align_plan_to_steps)
  // Its overlapped step's lower bound from measured parts (METRICS.md, "bound"); `sync` the strategy's settings.
  Bound bound = nullptr;
  // The planner's model of its step up to the backward pipeline, from its calibration with every part already scaled
  // to the target, and its knobs' values (`sync`): the compute and comm clocks where the backward starts. Null: the
  // calibration's compute-only forward, nothing on the comm stream (the planner's own).
  void (*forward)(const ScheduleCalibration& scaled, const SyncSpec& sync, double& compute_end,
                  double& comm_end) = nullptr;
  // The planner's model of its whole step, the update included (null: row.forward, then the planner's pipeline of the
  // buckets behind the backward, then the update). Its calibration's compute-only runs are its own, not the shared
  // ones (they hold work its model places from the shared parts).
  double (*planned)(const PlannedStep& step, const SyncSpec& sync) = nullptr;
  ScheduleFactory make = nullptr;  // null in a build without CUDA
  // Its part `name` (nullptr: none of that name).
  const PartSpec* part(const std::string& name) const;
  const Knob* knob(const std::string& name) const;  // its knob `name` (nullptr: none of that name)
};

// Registers `row` (at start-up, from a schedule's file). Two rows of one name stop the program.
struct RegisterSchedule {
  explicit RegisterSchedule(ScheduleRow row);
};

std::vector<std::string> schedule_names();  // every registered schedule, by name
// The row of schedule `name` (a strategy's row names it, SyncRow::schedule); throws std::invalid_argument when unknown.
const ScheduleRow& schedule_row(const std::string& name);

}  // namespace phase4

// A schedule's factory where CUDA is built, none elsewhere: OB_SCHEDULE_FACTORY(made_schedule<Mine>) in its row.
#if defined(OVERLAP_HAVE_CUDA)
#define OB_SCHEDULE_FACTORY(factory) (factory)
#else
#define OB_SCHEDULE_FACTORY(factory) nullptr
#endif
