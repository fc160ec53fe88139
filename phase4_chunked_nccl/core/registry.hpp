// The one registry behind phase 4's self-registering parts (model families' factories, schedules' rows): entries of
// one type by name, filled at start-up by the registering objects in each part's own file (made on first use, since those run
// during static initialisation, in no set order). The strategies' registry (sync/registry.hpp) keeps whole rows.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace phase4 {

template <class Factory>
class Registry {
 public:
  // Adds `make` under `name`; two of one name stop the program, naming `what` ("model families").
  static void add(const char* what, const std::string& name, Factory make) {
    if (!table().emplace(name, make).second) {
      std::fprintf(stderr, "phase4: two %s are called '%s'\n", what, name.c_str());
      std::abort();
    }
  }
  static std::vector<std::string> names() {  // sorted
    std::vector<std::string> names;
    for (const auto& entry : table()) names.push_back(entry.first);
    return names;
  }
  // The factory of `name`; throws std::invalid_argument naming `what` ("model family") when there is none.
  static const Factory& get(const char* what, const std::string& name) {
    const auto found = table().find(name);
    if (found == table().end())
      throw std::invalid_argument(std::string("no ") + what + " '" + name + "' in this build");
    return found->second;
  }

 private:
  static std::map<std::string, Factory>& table() {
    static std::map<std::string, Factory> entries;
    return entries;
  }
};

}  // namespace phase4
