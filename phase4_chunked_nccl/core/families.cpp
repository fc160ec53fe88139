#include "phase4_chunked_nccl/core/families.hpp"

#include <algorithm>
#include <utility>

#include "phase4_chunked_nccl/core/registry.hpp"

namespace phase4 {

using Families = Registry<FamilyRow>;

bool FamilyRow::takes(const std::string& option) const {
  return std::find(options.begin(), options.end(), option) != options.end();
}

RegisterFamily::RegisterFamily(FamilyRow row) {
  const std::string name = row.name;
  Families::add("model families", name, std::move(row));
}

std::vector<std::string> family_names() { return Families::names(); }

const FamilyRow& family_row(const std::string& name) { return Families::get("model family", name); }

}  // namespace phase4
