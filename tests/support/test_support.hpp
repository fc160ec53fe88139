// Helpers every test suite shares: parsing a phase's options as its main does, and the MPI world's shape.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/options.hpp"

namespace ob::testing {

// Parses `args` as `program`'s main does: CLI11 (options added by `setup`), then the cross-option checks of
// `validate`. Returns the exit code, or -1 when the options are accepted.
inline int exit_code_of(const std::string& program, std::vector<std::string> args,
                        const std::function<void(CLI::App&)>& setup,
                        const std::function<void(const CLI::App&)>& validate) {
  CLI::App app("test", program);
  setup(app);
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (auto code = ob::parse_options(app, static_cast<int>(argv.size()), argv.data(), false)) return *code;
  try {
    validate(app);
  } catch (const ob::UsageError&) {
    return ob::kExitUsage;
  }
  return -1;
}

inline std::string joined(const std::vector<std::string>& args) {
  std::string text;
  for (const auto& a : args) text += a + " ";
  return text;
}

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

}  // namespace ob::testing
