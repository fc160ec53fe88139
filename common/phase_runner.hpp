// One flow for every phase (DESIGN.md, "Flow of one run"): a phase's main declares its options and its run, and the
// runner does the rest the same way for every phase: options parsed and checked (exit 2 before any work), the output
// paths resolved, a watchdog (--timeout-s, --inject-fault), the run, a fault that never fired refused, the device
// and the phase's fields in the metadata, the outputs written as one set when every check passed, the console's
// header, table and outputs line, and the exit code (DESIGN.md). run_phase runs a phase in one process (phases 1
// and 2); run_mpi_phase (mpi_phase.hpp) the same flow on every rank of an MPI job (phases 3 and 4).
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/console_table.hpp"
#include "common/csv_writer.hpp"
#include "common/options.hpp"
#include "common/run_output.hpp"
#include "common/summary.hpp"
#include "common/timeline.hpp"
#include "common/watchdog.hpp"

namespace ob {

class MpiSession;

// What the run is given.
struct PhaseContext {
  MpiSession* mpi = nullptr;  // the MPI session (null: a phase of one process)
  int rank = 0, ranks = 1;
  bool root = false;
  const OutputPaths& paths;
  std::ostream* progress = nullptr;  // rank 0's progress lines (null with --quiet and on the other ranks)
};

// What the run hands back (the same on every rank, but for `device`).
struct PhaseResult {
  std::vector<SummaryRow> rows;
  std::vector<TimelineEvent> events;  // merged on rank 0
  std::string failure;  // the first failed check ("" when all passed)
  nlohmann::json meta = nlohmann::json::object();  // the phase's own metadata fields (rank 0's count)
  nlohmann::json device;  // this rank's device (null: none); gathered into meta "gpus"
  std::optional<CsvTable> power;  // the power samples' table (--power)
  std::vector<std::pair<std::string, std::string>> extra_files;  // (path, content), written with the set
  std::string header;  // the console's first line, without "# "
  std::vector<ConsoleColumn> columns;  // the console table's columns beyond the times
  std::string table;  // the console table where the phase renders its own ("": columns')
  std::vector<std::string> notes;  // console lines after the outputs line, when every check passed
};

struct Phase {
  std::string name;  // "phase3": the outputs' stem and the metadata's phase
  std::string program;  // the executable's name
  std::string description;  // the --help title
  CommonOptions* common = nullptr;  // where add_options puts --csv, --iters, ...
  FaultOptions* fault = nullptr;  // and --timeout-s, --inject-fault
  std::function<void(CLI::App&)> add_options;
  std::function<void(const CLI::App&)> validate;  // throws UsageError
  std::function<std::vector<NamedPath>()> inputs;  // the files the run reads, once validated (no output may be one)
  std::function<void()> on_stall;  // the watchdog's act before it ends the run (may be empty)
  // The work: the result, or an exit code to stop with (e.g. kExitSkipped: no device).
  std::function<std::variant<int, PhaseResult>(const PhaseContext&)> run;
};

// A phase's row of the table filled from its configuration: names, where its common and fault options go, and its
// own options (`add`: phaseN::add_options); the main then sets only what is its own (validate, inputs, run).
template <class PhaseType = Phase, class Config>
PhaseType make_phase(std::string name, std::string program, std::string description, Config& config,
                     void (*add)(CLI::App&, Config&)) {
  PhaseType phase;
  phase.name = std::move(name);
  phase.program = std::move(program);
  phase.description = std::move(description);
  phase.common = &config.common;
  phase.fault = &config.fault;
  phase.add_options = [&config, add](CLI::App& app) { add(app, config); };
  return phase;
}

// A phase of one process: its exit code (DESIGN.md, "Exit codes").
int run_phase(int argc, char** argv, const Phase& phase);

// Rank 0's part of the flow's end: the metadata (base, then `gathered`, then the phase's own fields), the outputs
// when every check passed, and the console.
void report_phase(int argc, char** argv, const Phase& phase, const OutputPaths& paths, PhaseResult& result,
                  const nlohmann::json& gathered);

}  // namespace ob
