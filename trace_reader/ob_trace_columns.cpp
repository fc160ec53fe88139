// ob_trace_columns TRACE OUT: a Kineto trace (plain or gzip) read natively into the columns ob-analyze reads
// (overlap_bench/trace/trace_native.py runs it), with its per-step figures (step_figures.hpp).
// --timeline RANK ORIGIN: a columns file on stdin, its timeline rows on stdout (timeline_csv.hpp; ORIGIN as C's
// hexadecimal float, exact). --parse-only: the bare parser (simdjson DOM over the same bytes,
// whole, nothing kept) for the parse limit ob-analyze-bench reports. Exit codes: 0 written; 2 the trace is
// refused, or a bad argument (TRACE not a readable file, OUT not a file it may write: the one path layer's kinds,
// common/path_options.hpp, one line why); 3 I/O; 4 not handled natively (the Python reader decides; one line why).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

#include <zlib.h>

#include "common/path_options.hpp"
#include "trace_reader/columns_file.hpp"
#include "trace_reader/kineto_reader.hpp"
#include "trace_reader/step_figures.hpp"
#include "trace_reader/timeline_csv.hpp"

namespace {

double cpu_seconds() {  // this process's CPU time: on a shared machine the wall time waits, this does not
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

int parse_only(const char* path) {
  // The file inflated in chunks and parsed whole by simdjson's DOM parser (its second parse timed: the first
  // faults its memory in): what any reader over this parser must pay; the bytes and the seconds on stdout.
  gzFile file = gzopen(path, "rb");
  if (!file) return 3;
  gzbuffer(file, 1 << 20);
  std::string text;
  char chunk[1 << 16];
  int got;
  auto start = std::chrono::steady_clock::now();
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(got));
  gzclose(file);
  auto read = std::chrono::steady_clock::now();
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  text.clear();
  text.shrink_to_fit();
  simdjson::dom::element root;
  auto error = parser.parse(padded).get(root);  // once to fault in the parser's memory, then timed
  auto parse_start = std::chrono::steady_clock::now();
  double cpu_start = cpu_seconds();
  if (!error) error = parser.parse(padded).get(root);
  double cpu_done = cpu_seconds();
  auto done = std::chrono::steady_clock::now();
  std::printf("{\"bytes\": %zu, \"read_s\": %.4f, \"parse_s\": %.4f, \"parse_cpu_s\": %.4f, \"ok\": %s}\n",
              padded.size(), std::chrono::duration<double>(read - start).count(),
              std::chrono::duration<double>(done - parse_start).count(), cpu_done - cpu_start,
              error ? "false" : "true");
  return error ? 4 : 0;
}

int timeline(const char* rank, const char* origin) {
  std::string data;
  char chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, stdin)) > 0) data.append(chunk, got);
  try {
    ob::trace::write_timeline(ob::trace::read_sections(data), std::strtoll(rank, nullptr, 10),
                              std::strtod(origin, nullptr), stdout);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 3;
  }
  return std::fflush(stdout) == 0 ? 0 : 3;
}

// TRACE and OUT checked by their kinds before anything is read or written: one line naming the argument, or "".
// A FIFO stays a TRACE it streams (its memory bounded whatever the size: test_trace_native pipes one through).
std::string bad_argument(const char* name, CLI::Validator kind, const char* value) {
  std::string text = value;
  std::error_code error;
  if (std::filesystem::is_fifo(std::filesystem::status(text, error)) && std::strcmp(name, "TRACE") == 0) return "";
  std::string why = kind(text);
  return why.empty() ? why : std::string(name) + ": " + why;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "usage: ob_trace_columns TRACE OUT | --parse-only TRACE | --timeline RANK ORIGIN";
  if (argc == 3 && std::strcmp(argv[1], "--parse-only") == 0) return parse_only(argv[2]);
  if (argc == 4 && std::strcmp(argv[1], "--timeline") == 0) return timeline(argv[2], argv[3]);
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "ob_trace_columns: error: '%s' is not an option here; %s\n", argv[i], usage);
      return 2;
    }
  }
  if (argc != 3) {
    std::fprintf(stderr, "%s\n", usage);
    return 2;
  }
  for (const std::string& bad :
       {bad_argument("TRACE", ob::input_file_kind(), argv[1]), bad_argument("OUT", ob::output_file_kind(), argv[2])}) {
    if (!bad.empty()) {
      std::fprintf(stderr, "ob_trace_columns: error: %s\n", bad.c_str());
      return 2;
    }
  }
  try {
    ob::trace::Columns columns = ob::trace::read_kineto_file(argv[1]);
    ob::trace::KernelFlags flags = ob::trace::kernel_flags(columns);
    ob::trace::write_columns(columns, flags, ob::trace::step_figures(columns, flags), argv[2]);
  } catch (const ob::trace::Refused& refused) {
    std::fprintf(stderr, "%s\n", refused.what());
    return 2;
  } catch (const ob::trace::Unhandled& unhandled) {
    std::fprintf(stderr, "%s\n", unhandled.what());
    return 4;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 3;
  }
  return 0;
}
