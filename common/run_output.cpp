#include "common/run_output.hpp"

#include <ctime>
#include <filesystem>

#include "common/atomic_file.hpp"

namespace ob {
namespace {

std::string stem_of(const std::string& path) {
  const std::string suffix = ".csv";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return path.substr(0, path.size() - suffix.size());
  }
  return path;
}

std::string default_summary_path(const std::string& phase) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return "results/runs/" + phase + "-" + stamp + ".csv";
}

void create_parent(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

}  // namespace

OutputPaths resolve_output_paths(const std::string& phase, const CommonOptions& options) {
  OutputPaths paths;
  if (!options.csv.empty()) require_writable_parent("--csv", options.csv);
  if (!options.timeline.empty()) require_writable_parent("--timeline", options.timeline);
  paths.summary_csv = options.csv.empty() ? default_summary_path(phase) : options.csv;
  paths.meta_json = stem_of(paths.summary_csv) + ".meta.json";
  paths.timeline_csv = options.timeline.empty() ? stem_of(paths.summary_csv) + ".timeline.csv" : options.timeline;
  paths.trace_json = stem_of(paths.timeline_csv) + ".trace.json";
  paths.power_csv = stem_of(paths.summary_csv) + ".power.csv";
  return paths;
}

void write_run_outputs(const OutputPaths& paths, const std::string& phase, const std::vector<SummaryRow>& rows,
                       nlohmann::json meta, const std::vector<TimelineEvent>& timeline, const CsvTable* power) {
  const CsvTable summary = summary_csv(phase, rows);
  meta["config_columns"] = config_columns(rows);
  create_parent(paths.summary_csv);
  create_parent(paths.timeline_csv);
  write_file_atomic(paths.timeline_csv, timeline_csv(timeline).to_string());
  write_file_atomic(paths.trace_json, chrome_trace(timeline).dump());
  write_file_atomic(paths.meta_json, meta.dump(2) + "\n");
  if (power) write_file_atomic(paths.power_csv, power->to_string());
  // The summary goes last: a summary on disk means the whole run's files are there.
  write_file_atomic(paths.summary_csv, summary.to_string());
}

std::string outputs_line(const OutputPaths& paths, bool written) {
  if (!written) return "# nothing written: a check failed";
  return "# summary: " + paths.summary_csv + "\n# timeline: " + paths.timeline_csv;
}

}  // namespace ob
