#include "common/run_output.hpp"

#include <ctime>
#include <filesystem>
#include <set>

#include "common/atomic_file.hpp"

namespace ob {
std::string stem_of(const std::string& path) {
  const std::string suffix = ".csv";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return path.substr(0, path.size() - suffix.size());
  }
  return path;
}

namespace {

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

OutputPaths resolve_output_paths(const std::string& phase, const CommonOptions& options,
                                 const std::vector<NamedPath>& inputs) {
  OutputPaths paths;
  require(options.csv != "-", "--csv", options.csv,
          "a file path: the summary, its metadata and the timeline are written together, as files (not to stdout)");
  require(options.timeline != "-", "--timeline", options.timeline, "a file path (not stdout)");
  if (!options.csv.empty()) require_writable_parent("--csv", options.csv);
  if (!options.timeline.empty()) require_writable_parent("--timeline", options.timeline);  // before any default
  paths.summary_csv = options.csv.empty() ? default_summary_path(phase) : options.csv;
  paths.meta_json = stem_of(paths.summary_csv) + ".meta.json";
  paths.timeline_csv = options.timeline.empty() ? stem_of(paths.summary_csv) + ".timeline.csv" : options.timeline;
  paths.trace_json = stem_of(paths.timeline_csv) + ".trace.json";
  paths.power_csv = stem_of(paths.summary_csv) + ".power.csv";
  paths.calibration_json = stem_of(paths.summary_csv) + ".calibration.json";
  // Each output a regular file or none yet (never a link), on a path of its own, its name in UTF-8.
  require_output_policy({{"--csv", paths.summary_csv},
                         {"--csv (its metadata)", paths.meta_json},
                         {"--timeline", paths.timeline_csv},
                         {"--timeline (its trace)", paths.trace_json},
                         {"--csv (its power CSV)", paths.power_csv},
                         {"--csv (its calibration)", paths.calibration_json}},
                        inputs);
  return paths;
}

CsvTable with_provenance(const CsvTable& summary, const nlohmann::json& meta) {
  std::string hardware;
  if (meta.contains("gpus") && meta["gpus"].is_array() && !meta["gpus"].empty()) {
    std::set<std::string> names;
    for (const auto& gpu : meta["gpus"]) {
      if (gpu.is_object() && gpu.contains("gpu_name")) names.insert(gpu["gpu_name"].get<std::string>());
    }
    for (const auto& name : names) hardware += (hardware.empty() ? "" : " + ") + name;
  }
  if (hardware.empty()) hardware = meta.value("cpu_model", std::string("unknown"));
  std::size_t hosts = 1;
  if (meta.contains("hosts") && meta["hosts"].is_array()) {
    hosts = std::set<std::string>(meta["hosts"].begin(), meta["hosts"].end()).size();
  }
  auto header = summary.header();
  for (const char* column : kProvenanceColumns) header.push_back(column);
  CsvTable table(header);
  for (auto row : summary.rows()) {
    row.insert(row.end(), {meta.value("commit", std::string("unknown")), hardware, std::to_string(hosts)});
    table.add_row(std::move(row));
  }
  return table;
}

void write_run_outputs(const OutputPaths& paths, const std::string& phase, const std::vector<SummaryRow>& rows,
                       nlohmann::json meta, const std::vector<TimelineEvent>& timeline, const CsvTable* power,
                       const std::vector<std::pair<std::string, std::string>>& extra) {
  const CsvTable summary = with_provenance(summary_csv(phase, rows), meta);
  meta["config_columns"] = config_columns(rows);
  create_parent(paths.summary_csv);
  create_parent(paths.timeline_csv);
  // Every file staged first, then all renamed, the summary last: a summary on disk means the whole set is there.
  // Text that is not UTF-8 (an argument) is written with replacement characters rather than failing the run.
  FileSet set;
  set.stage(paths.timeline_csv, timeline_csv(timeline).to_string());
  set.stage(paths.trace_json, trace_text(timeline, power ? power_from_csv(*power) : std::vector<PowerPoint>()));
  set.stage(paths.meta_json, meta.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (power) set.stage(paths.power_csv, power->to_string());
  for (const auto& [path, content] : extra) set.stage(path, content);
  set.stage(paths.summary_csv, summary.to_string());
  set.commit();
}

std::string outputs_line(const OutputPaths& paths, bool written) {
  if (!written) return "# nothing written: a check failed";
  return "# summary: " + paths.summary_csv + "\n# timeline: " + paths.timeline_csv;
}

}  // namespace ob
