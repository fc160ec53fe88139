// Where a run's files go, checked before any work, and the one function that writes them all.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/csv_writer.hpp"
#include "common/options.hpp"
#include "common/summary.hpp"
#include "common/timeline.hpp"

namespace ob {

struct OutputPaths {
  std::string summary_csv;  // --csv, or results/runs/<phase>-<date>.csv
  std::string meta_json;  // beside the summary: <stem>.meta.json
  std::string timeline_csv;  // --timeline, or <stem>.timeline.csv
  std::string trace_json;  // beside the timeline: <timeline stem>.trace.json
  std::string power_csv;  // beside the summary: <stem>.power.csv (phase 4 --power)
  std::string calibration_json;  // beside the summary: <stem>.calibration.json (phase 4 --calibrate)
};

// `path` without its ".csv": the stem every file of a run is named from ("run.timeline.csv" -> "run.timeline").
std::string stem_of(const std::string& path);

// Checks user-given paths (UsageError if a directory is missing or read-only) and fills in the defaults.
// Creates nothing.
OutputPaths resolve_output_paths(const std::string& phase, const CommonOptions& options,
                                 const std::vector<NamedPath>& inputs = {});

// The columns every summary ends with, from its metadata, so that merged tables keep where each row came from: the
// commit, the hardware (the ranks' GPU names, or the CPU model) and how many hosts ran it.
inline constexpr const char* kProvenanceColumns[] = {"commit", "hardware", "host_count"};

// `summary` with the provenance columns filled from `meta`.
CsvTable with_provenance(const CsvTable& summary, const nlohmann::json& meta);

// Writes the summary of `rows` (with the provenance columns), the metadata (with "config_columns": the summary columns that describe the
// configuration), the timeline CSV and Chrome trace (and the power CSV when given, and `extra`: path and content),
// each atomically and the summary last; creates the default directory.
void write_run_outputs(const OutputPaths& paths, const std::string& phase, const std::vector<SummaryRow>& rows,
                       nlohmann::json meta, const std::vector<TimelineEvent>& timeline, const CsvTable* power = nullptr,
                       const std::vector<std::pair<std::string, std::string>>& extra = {});

// The console's last line about files: "# summary: <csv>" (with the timeline beside it), or, after a failed check,
// "# nothing written: a check failed" (a failed run leaves no file; docs/USAGE.md, "Failure behaviour").
std::string outputs_line(const OutputPaths& paths, bool written);

}  // namespace ob
