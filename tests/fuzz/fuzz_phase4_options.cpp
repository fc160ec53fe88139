// libFuzzer target (issue 83): phase 4's command line as phase4_chunked_nccl reads it, before any work: the fuzzer's
// bytes cut at NUL into arguments, parsed by CLI11 with every option phase 4 declares (driver/options.cpp and
// common/options.cpp), then validated (phase4::validate). A usage error is the answer for a bad line (exit 2); any
// other exception, a crash or an ASan report is a finding (`--plan auto --plan-syncs ,` once read past a list).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/options.hpp"
#include "phase4_chunked_nccl/driver/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a command line, not a file
  std::vector<std::string> args{"phase4_chunked_nccl"};
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  args.push_back(word);
  if (args.size() > 64) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  phase4::Config config;
  CLI::App app("fuzz", "phase4_chunked_nccl");
  phase4::add_options(app, config);
  if (ob::parse_options(app, static_cast<int>(argv.size()), argv.data(), false)) return 0;  // refused, or --help
  try {
    phase4::validate(app, config);
  } catch (const ob::UsageError&) {}
  return 0;
}
