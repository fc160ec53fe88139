// The summary CSV: one row per (configuration, mode). The leading columns are fixed (DESIGN.md); each row then
// carries its configuration and derived metrics as named fields, and the table's columns are their union in
// first-seen order.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/csv_writer.hpp"
#include "common/stats.hpp"

namespace ob {

extern const std::vector<std::string> kSummaryColumns;  // system .. time_ms_max, time_ms_mean, time_ms_stddev

struct SummaryRow {
  std::string system = "overlap-bench";
  std::string mode;  // seq, overlap (or a strategy name), compute, comm, ideal, bound
  int ranks = 1;
  int chunks = 1;
  int iters = 0;
  Stats time_ms;
  std::vector<std::pair<std::string, std::string>> fields;  // configuration, then metrics

  template <typename T>
  SummaryRow& set(const std::string& key, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      return put(key, value ? "1" : "0");
    } else if constexpr (std::is_integral_v<T>) {
      return put(key, std::to_string(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      return put(key, format_number(static_cast<double>(value)));
    } else {
      return put(key, std::string(value));
    }
  }
  // The field's text, or "" when absent.
  std::string get(const std::string& key) const;

 private:
  SummaryRow& put(const std::string& key, std::string value);
};

CsvTable summary_csv(const std::string& phase, const std::vector<SummaryRow>& rows);

// Sets speedup, overlap_efficiency and overlap_pct on an overlapped row from the medians of the other modes.
void set_overlap_metrics(SummaryRow& row, double t_seq, double t_comp, double t_comm);

// A derived row (ideal, bound) carrying one value as all its statistics.
SummaryRow derived_row(const std::string& mode, double time_ms, const SummaryRow& like);

// Column of the console summary: the label and unit shown, and the summary field it reads ("" for p50/p95).
struct ConsoleColumn {
  std::string label, unit, field;
};

// The console table of a run: mode, time p50 and p95 (ms), then `extra` fields of each row.
std::string render_summary(const std::vector<SummaryRow>& rows, const std::vector<ConsoleColumn>& extra);

}  // namespace ob
