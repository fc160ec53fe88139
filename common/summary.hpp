// The summary CSV: one row per (configuration, mode). The leading columns are fixed (DESIGN.md); each row then
// carries its configuration and derived metrics as named fields, kept as numbers (or text) until the CSV is written,
// and the table's columns are their union in first-seen order. Fields set with config() describe the configuration;
// config_columns() names them, and the metadata lists them (so readers need no hand-kept list).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/csv_writer.hpp"
#include "common/metrics.hpp"
#include "common/modes.hpp"
#include "common/stats.hpp"

namespace ob {

// system .. time_ms_max, time_ms_mean, time_ms_stddev, time_ms_p50_ci_rel (the median's relative 95 % half-width),
// unstable (1 where that exceeds kUnstableCiRel)
extern const std::vector<std::string> kSummaryColumns;
// The leading columns that tell one configuration from another (the rest of kSummaryColumns are measurements).
extern const std::vector<std::string> kSummaryConfigColumns;  // system, phase, ranks, chunks, iters

using FieldValue = std::variant<double, std::int64_t, std::string>;

struct SummaryField {
  std::string key;
  FieldValue value;
  bool config = false;  // part of the configuration (not a measurement)
  std::string text() const;  // as written in the CSV: numbers through format_number, integers in decimal
};

struct SummaryRow {
  std::string system = "overlap-bench";
  Mode mode = Mode::kSeq;
  int ranks = 1;
  int chunks = 1;
  int iters = 0;
  Stats time_ms;
  double time_ci_rel = std::numeric_limits<double>::quiet_NaN();  // the median's spread (NaN for derived rows)
  std::vector<double> samples;  // the per-iteration times time_ms summarises (slowest rank; empty if derived)
  std::vector<SummaryField> fields;  // configuration, then metrics

  // time_ms, time_ci_rel and samples from the per-iteration times.
  SummaryRow& set_times(std::vector<double> iteration_ms);

  // A measurement or derived metric.
  template <typename T>
  SummaryRow& set(const std::string& key, const T& value) {
    return put(key, to_value(value), false);
  }
  SummaryRow& set(const std::string& key, const FieldValue& value) { return put(key, value, false); }
  // A configuration field.
  template <typename T>
  SummaryRow& config(const std::string& key, const T& value) {
    return put(key, to_value(value), true);
  }
  SummaryRow& config(const std::string& key, const FieldValue& value) { return put(key, value, true); }
  // The field's CSV text, or "" when absent.
  std::string get(const std::string& key) const;
  // The field as a number: NaN when absent or text.
  double number(const std::string& key) const;
  bool has(const std::string& key) const;
  // The median's spread is wider than kUnstableCiRel allows.
  bool unstable() const { return time_ci_rel > kUnstableCiRel; }

 private:
  template <typename T>
  static FieldValue to_value(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      return std::int64_t{value ? 1 : 0};
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<std::int64_t>(value);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(value);
    } else {
      return std::string(value);
    }
  }
  SummaryRow& put(const std::string& key, FieldValue value, bool config);
};

CsvTable summary_csv(const std::string& phase, const std::vector<SummaryRow>& rows);

// The configuration columns of the table summary_csv makes from `rows`, in header order.
std::vector<std::string> config_columns(const std::vector<SummaryRow>& rows);

// A derived row (ideal, bound) carrying one value as all its statistics.
SummaryRow derived_row(Mode mode, double time_ms, const SummaryRow& like);

// The first row of `mode`, or null.
const SummaryRow* find_row(const std::vector<SummaryRow>& rows, Mode mode);
SummaryRow* find_row(std::vector<SummaryRow>& rows, Mode mode);

// Column of the console summary: the label and unit shown, and the summary field it reads ("" for p50/p95).
struct ConsoleColumn {
  std::string label, unit, field;
};

// The console table of a run: mode, time p50 and p95 (ms), then `extra` fields of each row ("-" where absent).
std::string render_summary(const std::vector<SummaryRow>& rows, const std::vector<ConsoleColumn>& extra);

}  // namespace ob
