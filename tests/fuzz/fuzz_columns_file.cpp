// libFuzzer target (issue 83): the columns file (columns_file.hpp) as ob_trace_columns --timeline reads it back: its
// sections found (read_sections), then one rank's timeline rows written from them. A std::runtime_error naming what is
// wrong is the answer for a file that is not one; any other exception, a crash or an ASan report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "trace_reader/timeline_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FILE* sink = std::fopen("/dev/null", "w");
  try {
    const auto sections = ob::trace::read_sections(std::string_view(reinterpret_cast<const char*>(data), size));
    ob::trace::write_timeline(sections, 0, 0.0, sink);
  } catch (const std::runtime_error&) {}
  return 0;
}
