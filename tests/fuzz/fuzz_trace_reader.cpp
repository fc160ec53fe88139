// libFuzzer target (issue 83): the native Kineto reader (trace_reader/) as ob_trace_columns runs it, on the fuzzer's
// bytes as a trace's text fed in pieces of the sizes its first byte picks (the scanner must not depend on where a
// chunk ends), then the wrapping ends, the kernels' flags and the steps' figures. Refused and Unhandled are its
// answers for a bad trace (Python then refuses it or reads it); any other exception, a crash or an ASan report is a
// finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "trace_reader/columns.hpp"
#include "trace_reader/kineto_events.hpp"
#include "trace_reader/kineto_reader.hpp"
#include "trace_reader/step_figures.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  ob::trace::ReaderLimits limits;
  limits.chunk_bytes = 256;
  limits.most_event_bytes = 4096;
  limits.most_depth = 64;
  try {
    ob::trace::Columns columns;
    ob::trace::KinetoScanner scanner(columns, limits);
    const char* text = reinterpret_cast<const char*>(data + 1);
    for (size_t at = 0; at < size - 1; at += piece) scanner.feed(text + at, std::min(piece, size - 1 - at));
    scanner.finish();
    ob::trace::wrapping_ends(columns);
    const auto flags = ob::trace::kernel_flags(columns);
    ob::trace::step_figures(columns, flags);
  } catch (const ob::trace::Refused&) {
  } catch (const ob::trace::Unhandled&) {}
  return 0;
}
