#include "common/watchdog.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"

namespace ob {
namespace {

Watchdog* active = nullptr;

// One write per line, so that lines of ranks sharing a terminal do not interleave.
void say(const std::string& line) { std::cerr << line + "\n" << std::flush; }

}  // namespace

void require_step_within_timeout(const FaultOptions& options, const std::string& option, const std::string& value,
                                 double step_s) {
  require(step_s < options.timeout_s, option, value,
          "one step takes " + format_number(step_s, 3) + " s by its own figures, and --timeout-s " +
              format_number(options.timeout_s) + " ends a step that long: a larger --timeout-s or a shorter step");
}

void add_fault_options(CLI::App& app, FaultOptions& options) {
  app.add_option("--timeout-s", options.timeout_s,
                 "Abort the whole job when a rank makes no progress (an iteration, a collective) for this long")
      ->check(finite_in(1, 86400))
      ->capture_default_str();
  app.add_option("--inject-fault", options.inject_fault,
                 "For tests: RANK:STEP:KIND makes RANK exit or hang (KIND exit|hang) when it starts step STEP (or, "
                 "STEP start-up, before the ranks agree on their options), or (KIND corrupt, phase 3) corrupts the "
                 "result its next exact check reads");
}

FaultInjection parse_fault(const std::string& text) {
  FaultInjection fault;
  if (text.empty()) return fault;
  const std::string allowed =
      "RANK:STEP:KIND with RANK a whole number >= 0, STEP one >= 0 or start-up, and KIND exit, hang or corrupt";
  const auto parts = split_list(text, ':');
  require(parts.size() == 3 && text.find("::") == std::string::npos, "--inject-fault", text, allowed);
  auto whole = [&](const std::string& item) {
    std::size_t used = 0;
    long value = -1;
    try {
      value = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == item.size() && value >= 0 && value < (1l << 31), "--inject-fault", text, allowed);
    return value;
  };
  fault.rank = static_cast<int>(whole(parts[0]));
  fault.at_start_up = parts[1] == "start-up";
  fault.step = fault.at_start_up ? -1 : whole(parts[1]);
  fault.kind = parts[2];
  require(fault.kind == "exit" || fault.kind == "hang" || fault.kind == "corrupt", "--inject-fault", text, allowed);
  require(!(fault.at_start_up && fault.kind == "corrupt"), "--inject-fault", text,
          "a start-up fault exits or hangs: there is no check to corrupt before the first step");
  return fault;
}

Watchdog::Watchdog(std::string program, int rank, int ranks, const FaultOptions& options,
                   std::function<void()> on_stall)
    : program_(std::move(program)), rank_(rank), timeout_(options.timeout_s), fault_(parse_fault(options.inject_fault)),
      on_stall_(std::move(on_stall)), last_(std::chrono::steady_clock::now()) {
  require(fault_.rank < ranks, "--inject-fault", options.inject_fault,
          "RANK must be below the job's " + std::to_string(ranks) + " rank(s)");
  thread_ = std::thread([this] { watch(); });
  active = this;
  if (fault_.at_start_up && fault_.rank == rank_) inject("at start-up (before the ranks agree on their options)");
}

Watchdog::~Watchdog() {
  if (active == this) active = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::progress(const std::string& where, bool counts_as_step) {
  long step = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    where_ = counts_as_step ? where + " (step " + std::to_string(step_) + ")" : where;
    last_ = std::chrono::steady_clock::now();
    if (counts_as_step) step = step_++;
  }
  if (step < 0 || fault_.rank != rank_ || fault_.step != step) return;
  if (fault_.kind == "corrupt") {  // taken by the next exact check (take_injected_corruption)
    corrupt_pending_ = true;
    return;
  }
  inject("at step " + std::to_string(step) + " (" + where + ")");
}

void Watchdog::inject(const std::string& when) {
  say(program_ + ": rank " + std::to_string(rank_) + ": injected fault: " + fault_.kind + " " + when);
  if (fault_.kind == "exit") std::_Exit(kExitRuntime);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // hang: this rank stops taking part
}

bool Watchdog::take_corruption() {
  if (!corrupt_pending_.exchange(false)) return false;
  corrupted_ = true;
  return true;
}

std::string Watchdog::unfired_fault() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fault_.rank != rank_ || fault_.at_start_up) return "";
  if (fault_.kind == "corrupt" && fault_.step < step_ && !corrupted_) {
    return "--inject-fault: no exact check read a result after step " + std::to_string(fault_.step) +
        " to corrupt (phase 3's comm-only steps are checked with --check)";
  }
  if (fault_.step < step_) return "";
  return "--inject-fault: step " + std::to_string(fault_.step) + " never came: the run's steps were 0 to " +
      std::to_string(step_ - 1) + " (warm-up, timed and check iterations of every mode)";
}

void Watchdog::watch() {
  const auto poll = std::chrono::duration<double>(std::min(1.0, timeout_.count() / 10));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, poll);
    if (stop_) return;
    const std::chrono::duration<double> quiet = std::chrono::steady_clock::now() - last_;
    if (quiet < timeout_) continue;
    const std::string seconds = std::to_string(std::lround(quiet.count()));
    say(program_ + ": rank " + std::to_string(rank_) + ": no progress for " + seconds + " s (--timeout-s " +
        format_number(timeout_.count()) + ") in " + where_ + "; aborting the job");
    lock.unlock();
    // Every stalled rank's watchdog fires within a poll of this one: let them print where they are first.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::thread([] {  // should the abort itself hang
      std::this_thread::sleep_for(std::chrono::seconds(20));
      std::_Exit(kExitRuntime);
    })
        .detach();
    if (on_stall_) on_stall_();
    std::_Exit(kExitRuntime);
  }
}

void step_started(const std::string& where) {
  if (active) active->progress(where, true);
}

bool take_injected_corruption() { return active && active->take_corruption(); }

void progress_note(const std::string& where) {
  if (active) active->progress(where, false);
}

std::string iteration_name(const std::string& mode, int i, int warmup) {
  return i < warmup ? mode + " warm-up " + std::to_string(i + 1) : mode + " iteration " + std::to_string(i - warmup);
}

}  // namespace ob
