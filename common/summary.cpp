#include "common/summary.hpp"

#include <algorithm>

#include "common/console_table.hpp"
#include "common/metrics.hpp"

namespace ob {

const std::vector<std::string> kSummaryColumns = {
    "system",     "phase",       "mode",        "ranks",       "chunks",        "iters",          "time_ms_p50",
    "time_ms_p95", "time_ms_min", "time_ms_max", "time_ms_mean", "time_ms_stddev"};

SummaryRow& SummaryRow::put(const std::string& key, std::string value) {
  for (auto& field : fields) {
    if (field.first == key) {
      field.second = std::move(value);
      return *this;
    }
  }
  fields.emplace_back(key, std::move(value));
  return *this;
}

std::string SummaryRow::get(const std::string& key) const {
  for (const auto& field : fields) {
    if (field.first == key) return field.second;
  }
  return "";
}

CsvTable summary_csv(const std::string& phase, const std::vector<SummaryRow>& rows) {
  std::vector<std::string> header = kSummaryColumns;
  for (const auto& row : rows) {
    for (const auto& field : row.fields) {
      if (std::find(header.begin(), header.end(), field.first) == header.end()) header.push_back(field.first);
    }
  }
  CsvTable table(header);
  for (const auto& row : rows) {
    std::vector<std::string> line = {row.system,
                                     phase,
                                     row.mode,
                                     std::to_string(row.ranks),
                                     std::to_string(row.chunks),
                                     std::to_string(row.iters),
                                     format_number(row.time_ms.p50),
                                     format_number(row.time_ms.p95),
                                     format_number(row.time_ms.min),
                                     format_number(row.time_ms.max),
                                     format_number(row.time_ms.mean),
                                     format_number(row.time_ms.stddev)};
    for (std::size_t c = kSummaryColumns.size(); c < header.size(); ++c) line.push_back(row.get(header[c]));
    table.add_row(std::move(line));
  }
  return table;
}

void set_overlap_metrics(SummaryRow& row, double t_seq, double t_comp, double t_comm) {
  const double t_ovl = row.time_ms.p50;
  row.set("speedup", speedup(t_seq, t_ovl));
  row.set("overlap_efficiency", overlap_efficiency(t_comp, t_comm, t_ovl));
  row.set("overlap_pct", overlap_pct(t_ovl, t_comp, t_comm));
}

SummaryRow derived_row(const std::string& mode, double time_ms, const SummaryRow& like) {
  SummaryRow row = like;
  row.mode = mode;
  row.time_ms = constant_stats(time_ms);
  return row;
}


std::string render_summary(const std::vector<SummaryRow>& rows, const std::vector<ConsoleColumn>& extra) {
  std::vector<std::pair<std::string, std::string>> columns = {{"mode", ""}, {"time_p50", "ms"}, {"time_p95", "ms"}};
  for (const auto& column : extra) columns.emplace_back(column.label, column.unit);
  ConsoleTable table(columns);
  for (const auto& row : rows) {
    std::vector<std::string> cells = {row.mode, format_number(row.time_ms.p50, 5), format_number(row.time_ms.p95, 5)};
    for (const auto& column : extra) {
      std::string value = row.get(column.field);
      // Shorten long numbers for the console; the CSV keeps full precision.
      try {
        std::size_t used = 0;
        const double number = std::stod(value, &used);
        if (used == value.size()) value = format_number(number, 4);
      } catch (const std::exception&) {
      }
      cells.push_back(value.empty() ? "-" : value);
    }
    table.add_row(std::move(cells));
  }
  return table.render();
}

}  // namespace ob
