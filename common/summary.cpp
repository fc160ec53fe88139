#include "common/summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/console_table.hpp"
#include "common/csv_schema.hpp"
#include "common/metrics.hpp"

namespace ob {

const std::vector<std::string> kSummaryColumns = csv_schema_columns("summary", "leading");
const std::vector<std::string> kSummaryConfigColumns = csv_schema_columns("summary", "config");

std::string SummaryField::text() const {
  if (const auto* number = std::get_if<double>(&value)) return format_number(*number);
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  return std::get<std::string>(value);
}

SummaryRow& SummaryRow::put(const std::string& key, FieldValue value, bool config) {
  for (auto& field : fields) {
    if (field.key == key) {
      field.value = std::move(value);
      field.config = config;
      return *this;
    }
  }
  fields.push_back({key, std::move(value), config});
  return *this;
}

std::string SummaryRow::get(const std::string& key) const {
  for (const auto& field : fields) {
    if (field.key == key) return field.text();
  }
  return "";
}

double SummaryRow::number(const std::string& key) const {
  for (const auto& field : fields) {
    if (field.key != key) continue;
    if (const auto* number = std::get_if<double>(&field.value)) return *number;
    if (const auto* integer = std::get_if<std::int64_t>(&field.value)) return static_cast<double>(*integer);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

bool SummaryRow::has(const std::string& key) const {
  return std::any_of(fields.begin(), fields.end(), [&](const SummaryField& f) { return f.key == key; });
}

namespace {
// The header: the fixed columns, then every field in first-seen order; `config` marks configuration columns.
std::vector<std::string> header_of(const std::vector<SummaryRow>& rows, std::vector<std::string>* config) {
  std::vector<std::string> header = kSummaryColumns;
  if (config) *config = kSummaryConfigColumns;
  for (const auto& row : rows) {
    for (const auto& field : row.fields) {
      if (std::find(header.begin(), header.end(), field.key) != header.end()) continue;
      header.push_back(field.key);
      if (config && field.config) config->push_back(field.key);
    }
  }
  return header;
}
}  // namespace

SummaryRow& SummaryRow::set_times(std::vector<double> iteration_ms) {
  time_ms = summarize(iteration_ms);
  time_ci_rel = median_ci_rel(iteration_ms);
  samples = std::move(iteration_ms);
  return *this;
}

CsvTable summary_csv(const std::string& phase, const std::vector<SummaryRow>& rows) {
  const std::vector<std::string> header = header_of(rows, nullptr);
  CsvTable table(header);
  for (const auto& row : rows) {
    std::vector<std::string> line = {row.system,
                                     phase,
                                     mode_name(row.mode),
                                     std::to_string(row.ranks),
                                     std::to_string(row.chunks),
                                     std::to_string(row.iters),
                                     format_number(row.time_ms.p50),
                                     format_number(row.time_ms.p95),
                                     format_number(row.time_ms.min),
                                     format_number(row.time_ms.max),
                                     format_number(row.time_ms.mean),
                                     format_number(row.time_ms.stddev),
                                     std::isnan(row.time_ci_rel) ? "" : format_number(row.time_ci_rel),
                                     row.unstable() ? "1" : "0"};
    for (std::size_t c = kSummaryColumns.size(); c < header.size(); ++c) line.push_back(row.get(header[c]));
    table.add_row(std::move(line));
  }
  return table;
}

std::vector<std::string> config_columns(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> config;
  header_of(rows, &config);
  return config;
}

SummaryRow derived_row(Mode mode, double time_ms, const SummaryRow& like) {
  SummaryRow row;
  row.system = like.system;
  row.mode = mode;
  row.ranks = like.ranks;
  row.chunks = like.chunks;
  row.iters = like.iters;
  row.time_ms = constant_stats(time_ms);
  for (const auto& field : like.fields) {
    if (field.config) row.fields.push_back(field);  // the configuration, not the other row's measurements
  }
  return row;
}

const SummaryRow* find_row(const std::vector<SummaryRow>& rows, Mode mode) {
  for (const auto& row : rows) {
    if (row.mode == mode) return &row;
  }
  return nullptr;
}

SummaryRow* find_row(std::vector<SummaryRow>& rows, Mode mode) {
  return const_cast<SummaryRow*>(find_row(static_cast<const std::vector<SummaryRow>&>(rows), mode));
}

std::string render_summary(const std::vector<SummaryRow>& rows, const std::vector<ConsoleColumn>& extra) {
  std::vector<std::pair<std::string, std::string>> columns = {{"mode", ""}, {"time_p50", "ms"}, {"time_p95", "ms"}};
  for (const auto& column : extra) columns.emplace_back(column.label, column.unit);
  ConsoleTable table(columns);
  bool unresolved = false, out_of_range = false, unsteady = false;
  for (const auto& row : rows) {
    unsteady = unsteady || row.unstable();
    std::vector<std::string> cells = {mode_name(row.mode),
                                      format_number(row.time_ms.p50, 5) + (row.unstable() ? "~" : ""),
                                      format_number(row.time_ms.p95, 5)};
    for (const auto& column : extra) {
      // Numbers shortened for the console; the CSV keeps full precision. A metric whose 95 % interval holds its
      // "no effect" value is not resolved; one outside its meaningful range is flagged.
      const double number = row.number(column.field);
      const std::string text = row.get(column.field);
      const double lo = row.number(column.field + "_ci_lo"), hi = row.number(column.field + "_ci_hi");
      std::string cell = text.empty() ? "-" : std::isnan(number) ? text : format_number(number, 4);
      if (!std::isnan(number) && !resolved(column.field, lo, hi)) {
        cell = "n.r.";
        unresolved = true;
      } else if (!std::isnan(number) && !in_meaningful_range(column.field, number)) {
        cell += "!";
        out_of_range = true;
      }
      cells.push_back(cell);
    }
    table.add_row(std::move(cells));
  }
  std::string text = table.render();
  if (unresolved) text += "# n.r.: not resolved, its 95 % interval over the iterations holds \"no effect\"\n";
  if (unsteady) {
    text += "# ~: unstable: the median's 95 % interval over the iterations is wider than +-" +
        format_number(100 * kUnstableCiRel) + " % (a busy machine or too few --iters)\n";
  }
  if (out_of_range) text += "# !: outside the metric's meaningful range (overlap_efficiency: 0 to 1)\n";
  return text + "# the metrics and the ideal and bound rows: METRICS.md\n";
}

}  // namespace ob
