// Phase 4's command line in a test: the options parsed and validated as the binary does, before any work.
#pragma once

#include <string>
#include <vector>

#include "common/run_output.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"
#include "tests/support/test_support.hpp"

namespace phase4::testing {

// The exit code phase4_chunked_nccl would give `args` (-1: none, it would run); the parsed options into `out`.
inline int exit_code_of(std::vector<std::string> args, Config* out = nullptr) {
  Config config;
  const int code = ob::testing::exit_code_of(
      "phase4_chunked_nccl", std::move(args), [&](CLI::App& app) { add_options(app, config); },
      [&](const CLI::App& app) {
        validate(app, config);
        ob::resolve_output_paths("phase4", config.common);
      });
  if (out && code == -1) *out = config;
  return code;
}

}  // namespace phase4::testing
