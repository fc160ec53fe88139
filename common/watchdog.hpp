// A rank that stalls must not hold a cluster allocation. The watchdog is a thread that ends the whole job when the
// main thread reports no progress for --timeout-s seconds: it names this rank and the step it stalled in, gives the
// other ranks' watchdogs a moment to say where they are, then runs the phase's abort (ncclCommAbort, MPI_Abort).
// --inject-fault RANK:STEP:KIND makes one rank exit or hang at the start of a step, to prove that this works, or
// (KIND corrupt) corrupts what that rank's next exact check reads, to prove a failed check reaches the exit code.
// Steps count every training iteration a rank starts (warm-up and checks included), from 0, over all modes; STEP
// start-up is before the first, as the watchdog starts (on each rank's own options, before the ranks agree on theirs).
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ob {

struct FaultOptions {
  double timeout_s = 300;  // no progress for this long aborts the job
  std::string inject_fault;  // "RANK:STEP:KIND" (KIND exit, hang or corrupt); empty: none
};

// Adds --timeout-s and --inject-fault.
void add_fault_options(CLI::App& app, FaultOptions& options);
// A step that by its own figures (`step_s`) takes --timeout-s or longer is refused before any work (exit 2), not
// ended by the watchdog after it ran.
void require_step_within_timeout(const FaultOptions& options, const std::string& option, const std::string& value,
                                 double step_s);

struct FaultInjection {
  int rank = -1;
  long step = -1;  // -1 with at_start_up
  bool at_start_up = false;  // STEP "start-up": as the watchdog starts, before the ranks agree on their options
  std::string kind;  // exit | hang | corrupt
};

// Parses --inject-fault's value; an empty text is no fault. Throws UsageError naming the option.
FaultInjection parse_fault(const std::string& text);

class Watchdog {
 public:
  // `on_stall` runs on the watchdog thread after the message; it should end the job (it is followed by _Exit(3),
  // and it gets 20 s before that happens anyway). Only one watchdog is active at a time: step_started() and
  // progress_note() reach it. Throws UsageError when the fault names a rank the job does not have. A start-up fault
  // for this rank happens here.
  Watchdog(std::string program, int rank, int ranks, const FaultOptions& options, std::function<void()> on_stall);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The main thread is alive and now in `where`; with `counts_as_step`, a new step starts (and any fault planned for
  // this rank and step happens now).
  void progress(const std::string& where, bool counts_as_step);

  // "" unless --inject-fault named this rank and a step it never reached: then what went wrong, for a usage error
  // (a fault that never fires proves nothing). Called once the run's steps are done.
  std::string unfired_fault();
  // True once after a corrupt fault's step: the check that asks corrupts what it read.
  bool take_corruption();

 private:
  void watch();
  [[noreturn]] void inject(const std::string& when);

  std::string program_;
  int rank_;
  std::chrono::duration<double> timeout_;
  FaultInjection fault_;
  std::function<void()> on_stall_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string where_ = "start-up (the ranks' option agreement)";
  std::chrono::steady_clock::time_point last_;
  long step_ = 0;
  bool stop_ = false;
  std::atomic<bool> corrupt_pending_{false};
  std::atomic<bool> corrupted_{false};
  std::thread thread_;
};

// Progress reports for the active watchdog (nothing happens without one, as in tests).
void step_started(const std::string& where);  // a training iteration begins
void progress_note(const std::string& where);  // anything else long enough to matter (set-up, checks)
// True once after a corrupt fault fired on this rank (false without a watchdog): the caller corrupts what it checks.
bool take_injected_corruption();
// "seq warm-up 2" for i < warmup, else "seq iteration 4" (i - warmup): what step_started() is told.
std::string iteration_name(const std::string& mode, int i, int warmup);

}  // namespace ob
