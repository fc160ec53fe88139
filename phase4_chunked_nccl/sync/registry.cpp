#include "phase4_chunked_nccl/sync/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/options.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"

namespace phase4 {
namespace {

std::vector<SyncRow>& rows() {
  static std::vector<SyncRow> table;  // made on first use: registrations run during static initialisation
  return table;
}

}  // namespace

RegisterSync::RegisterSync(SyncRow row) {
  if (find_sync(row.name)) {
    std::fprintf(stderr, "phase4: two --sync strategies are called '%s'\n", row.name.c_str());
    std::abort();
  }
  auto& table = rows();
  const auto at = std::lower_bound(table.begin(), table.end(), row.name,
                                   [](const SyncRow& r, const std::string& name) { return r.name < name; });
  table.insert(at, std::move(row));
}

const std::vector<SyncRow>& sync_rows() { return rows(); }

const SyncRow* find_sync(const std::string& name) {
  for (const auto& row : rows()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

const SyncRow& sync_row(const std::string& name) {
  if (const SyncRow* row = find_sync(name)) return *row;
  throw std::invalid_argument("--sync: no strategy '" + name + "' in this build");
}

std::vector<std::string> sync_names(const std::string& schedule) {
  std::vector<std::string> names;
  for (const auto& row : rows()) {
    if (row.schedule == schedule) names.push_back(row.name);
  }
  return names;
}

std::vector<std::string> sync_names() {
  std::vector<std::string> names;
  for (const auto& row : rows()) names.push_back(row.name);
  return names;
}

std::string sync_list(const std::string& schedule) { return ob::join(sync_names(schedule)); }

const ScheduleRow& schedule_of(const std::string& sync) { return schedule_row(sync_row(sync).schedule); }

const std::string& reference_sync() {
  for (const auto& row : rows()) {
    if (row.exact_reference) return row.name;
  }
  throw std::logic_error("no strategy of this build is the exact reference");
}
std::string sync_list() { return ob::join(sync_names()); }

}  // namespace phase4
