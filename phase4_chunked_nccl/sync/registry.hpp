// The --sync strategies, nccl-tests style: each is a row in its own file under sync/ that registers itself at
// start-up (a RegisterSync object), so adding one is one new file and no edit elsewhere. A row says everything the
// rest of phase 4 needs to know without running it: its name and help, what it can do, which schedule drives it,
// the device memory it needs, the strategy its bound_ref compares with, and the factory that makes it. A build
// without CUDA has the rows with no factory: the options, the planner and phase4_predict know every strategy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "phase4_chunked_nccl/core/choices.hpp"

namespace phase4 {

class GradientSync;
struct SyncContext;
struct ScheduleRow;

// Which schedule drives a strategy: a name a schedule of schedule/ registers its row under (core/schedules.hpp);
// a strategy's row names another than this default where it needs one.
inline constexpr const char* kAllReduceSchedule = "all-reduce";
inline constexpr const char* kCarrySchedule = "carry";

struct SyncRow {
  std::string name, help;
  std::string schedule = kAllReduceSchedule;
  CtaPolicy cta_policy = CtaPolicy::kDefault;  // the CTA policy its communicator needs (kDefault: any)
  bool bf16 = false;  // runs with --comm-dtype bf16
  bool graph = true;  // runs under --graph
  bool accumulation = true;  // runs with --accum-steps > 1
  bool peer_access = false;  // needs the GPUs' peer access (symmetric windows, copy engines): --transport nvlink only
  // The schedule's bound from isolated parts holds for it. Not for the copy-engine pipelines: their comm-only run
  // times the copies without the compute stream's share of them, so their bound rows are models (METRICS.md).
  bool bounded = true;
  // The strategy on NCCL's own kernels whose isolated communication bound_ref also takes ("": this one's).
  std::string reference;
  // A sharded strategy: the all-reduce one on the same engines, whose time per bucket measured on more ranks
  // (phase4_predict --comm) gives its collectives' rise with the rank count ("": none, scaled as a ring).
  std::string scales_as;
  // Its collectives have no tree (reduce-scatters, all-to-alls): on more ranks the ring's (n - 1) / n share scales
  // them (tools/predict_comm.cpp).
  bool ring_only = false;
  // A sharded strategy whose update sums every rank's received copy of its slices (sharded-ce: the reduction's sum
  // fused into the update): its traffic per tensor of n elements falls as n (1 + 2 / ranks), not as 3 n / ranks.
  bool update_sums_ranks = false;
  // A sharded strategy whose all-gather is one copy-engine copy from each peer (sharded-ce): on more ranks it takes
  // the copies' latency once per peer and their bytes as the (ranks - 1) / ranks share (planner.cpp, gather_scale).
  bool gathers_by_copies = false;
  // The strategy every other's weights and gradients are checked against (--check), and DDP's buckets predicted
  // with: the plain in-place all-reduce. One row sets it (reference_sync()).
  bool exact_reference = false;
  // Device buffers beyond the model's own, in gradients (the gradient itself included), for the memory estimate.
  double buffers = 1;
  std::unique_ptr<GradientSync> (*make)(const SyncContext&) = nullptr;  // null in a build without CUDA
};

// `row` as a strategy on the copy engines (ce, sharded-ce) is: CTA policy zero, the GPUs' peer access, and its
// bound rows models (its comm-only run times the copies without the compute stream's share of them).
inline SyncRow on_copy_engines(SyncRow row) {
  row.cta_policy = CtaPolicy::kZero;
  row.bounded = false;
  row.peer_access = true;
  return row;
}

// `row`'s all-reduces driven by the carry schedule (schedule/carry.cpp) as `<name>-carry`: the buckets of the first
// --carry forward layers reduced beside the next step's forward. One micro-step per step (the next step's
// accumulation would overwrite the gradient its forward is still reducing); never the exact reference.
inline SyncRow carrying(SyncRow row) {
  row.name += "-carry";
  row.help += "; the first --carry forward layers' buckets reduced beside the next forward";
  row.schedule = kCarrySchedule;
  row.accumulation = false;
  row.exact_reference = false;
  return row;
}

// Registers `row` (at start-up, from a strategy's file). Two rows of one name stop the program.
struct RegisterSync {
  explicit RegisterSync(SyncRow row);
};

const std::vector<SyncRow>& sync_rows();  // every registered strategy, by name
const SyncRow* find_sync(const std::string& name);  // null when no such strategy is built in
const SyncRow& sync_row(const std::string& name);  // throws std::invalid_argument naming --sync when unknown
std::vector<std::string> sync_names(const std::string& schedule);  // the strategies one schedule drives, by name
std::vector<std::string> sync_names();  // all of them
std::string sync_list(const std::string& schedule);  // "ce, nccl, nccl-sym": for messages
std::string sync_list();  // all of them, likewise
// The row of the schedule that drives strategy `sync` (core/schedules.hpp); throws std::invalid_argument naming
// --sync when unknown.
const ScheduleRow& schedule_of(const std::string& sync);
// The strategy whose row is the exact reference (SyncRow::exact_reference); throws std::logic_error where none is.
const std::string& reference_sync();

}  // namespace phase4

// A strategy's factory where CUDA is built, none elsewhere: OB_SYNC_FACTORY(make_mine) in its row.
#if defined(OVERLAP_HAVE_CUDA)
#define OB_SYNC_FACTORY(factory) (factory)
#else
#define OB_SYNC_FACTORY(factory) nullptr
#endif
