// ob_trace: the Chrome trace of a timeline CSV (and its power CSV), written by the same code the binaries use
// (common/timeline.hpp). Remakes the traces of runs written by an older trace writer, or a trace for a timeline
// edited by hand.
//
//   ob_trace RUN.timeline.csv [--power RUN.power.csv] [-o RUN.timeline.trace.json]
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/atomic_file.hpp"
#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/options.hpp"
#include "common/path_options.hpp"
#include "common/run_output.hpp"
#include "common/timeline.hpp"

namespace {

// `parse` of the table a CSV file holds; a usage error naming `option`, the file and why, when it cannot be read.
template <typename Parse>
auto read_csv(const std::string& option, const std::string& path, Parse parse) {
  const std::string text = ob::read_input_file(option, path);
  try {
    return parse(ob::CsvTable::parse(text));
  } catch (const std::invalid_argument& error) {
    throw ob::UsageError(option + ": '" + path + "' is invalid: " + error.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string program = "ob_trace";
  return ob::guarded_main(program, [&]() -> int {
    CLI::App app("The Chrome trace (Perfetto, chrome://tracing) of a timeline CSV, as the binaries write it", program);
    std::string timeline_path, power_path, output;
    ob::add_input_option(app, "timeline", timeline_path, "A timeline CSV written by a phase binary")->required();
    ob::add_input_option(app, "--power", power_path, "Its power CSV (phase 4 --power): a counter track per rank");
    ob::add_output_option(app, "-o,--output", output,
                          "Where to write the trace (default: <timeline stem>.trace.json beside it)");
    app.set_version_flag("--version", ob::version_text(program), "Print the version, commit and build, then exit");
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;
    if (output.empty()) output = ob::stem_of(timeline_path) + ".trace.json";  // where the binaries put it
    ob::require_writable_parent("--output", output);
    std::vector<ob::NamedPath> inputs = {{"the timeline", timeline_path}};
    if (!power_path.empty()) inputs.push_back({"--power", power_path});
    ob::require_output_policy({{"--output", output}}, inputs);
    const auto events = read_csv("timeline", timeline_path, ob::timeline_from_csv);
    const auto power =
        power_path.empty() ? std::vector<ob::PowerPoint>() : read_csv("--power", power_path, ob::power_from_csv);
    ob::write_file_atomic(output, ob::trace_text(events, power));
    std::cerr << program << ": wrote " << output << " (" << events.size() << " events)" << std::endl;
    return ob::kExitOk;
  });
}
