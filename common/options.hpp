// Command-line options every phase shares, parsed once with CLI11 into plain structs that are then passed down
// as const. Each phase adds its own options to the same CLI::App before calling parse_options().
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ob {

struct CommonOptions {
  int iters = 20;
  int warmup = 3;
  double min_time_ms = 0;  // > 0: more timed iterations where the step is short (common/iteration.hpp)
  std::string csv;  // summary CSV; empty: results/runs/<phase>-<time>.csv
  std::string timeline;  // timeline CSV (+ .trace.json); empty: beside the summary
  std::uint64_t seed = 1234;
  bool check = false;
  bool quiet = false;
};

// Adds --iters --warmup --min-time-ms --csv --timeline --seed --check --quiet.
void add_common_options(CLI::App& app, CommonOptions& options);

// Parses argv into the options bound to `app`. Returns nothing when the program should go on; otherwise the exit
// code to return at once: 0 after --help, kExitUsage after a bad option (one line on stderr, only if `print`).
// Whole numbers are decimal for every integer option ("010", "0x10", "5 " are usage errors naming the option).
std::optional<int> parse_options(CLI::App& app, int argc, char** argv, bool print);

// The same, printing nothing: the exit code (none: go on), the help text for stdout, the error (without the
// "<program>: error: " that parse_options puts before it).
struct ParseOutcome {
  std::optional<int> exit;
  std::string help, error;
};
ParseOutcome parse_quietly(CLI::App& app, int argc, char** argv);

// "64", "4K", "2M", "1G" (powers of 1024, case-insensitive, optional trailing B) -> count. Throws UsageError
// naming `option` for anything else, zero or negative values included.
std::uint64_t parse_size(const std::string& option, const std::string& text);

// CLI11 transformer turning a size with a K/M/G suffix into a plain integer string, for numeric options.
CLI::Validator size_suffix();

// A count option (rows, features, widths): SIZE[K|M|G] (size_suffix), from 1 to `most`, its default shown.
CLI::Option* add_size_option(CLI::App& app, const std::string& name, int& value, const std::string& help, int most);

// CLI11 check: a finite number (no NaN or infinity) in [lo, hi].
CLI::Validator finite_in(double lo, double hi);

// An option whose value `check` bounds (CLI::Range, CLI::IsMember, finite_in), its default shown in --help: the one
// way every phase declares one.
template <class T>
CLI::Option* add_checked_option(CLI::App& app, const std::string& name, T& value, const std::string& help,
                                const CLI::Validator& check) {
  return app.add_option(name, value, help)->check(check)->capture_default_str();
}

// Throws UsageError naming `option` unless `bytes` fits in half of this machine's physical memory.
void require_fits_in_host_memory(const std::string& option, const std::string& value, double bytes);

// The most timeline events a run may keep (each is a CSV row and a Chrome trace event, built in memory before the
// files are written): a run that would keep more is refused up front.
inline constexpr double kMostTimelineEvents = 1e6;

// The longest run a binary starts when its length can be stated before it runs (phase 2's timed waits, phase 3's busy
// loops, synthetic models that measure in seconds to minutes): an hour. A run stated longer is a typing slip (ms for
// us, a chunk count with extra zeros: round 5's N87 stated 8.5 hours), whatever --timeout-s allows.
inline constexpr double kLongestStatedRunS = 3600;

// Throws UsageError naming `option` and `value` when the run it asks for would take longer than kLongestStatedRunS.
void require_stated_length(const std::string& option, const std::string& value, double seconds);

// Throws UsageError naming `option` when a run would keep more than kMostTimelineEvents events.
void require_timeline_fits(const std::string& option, const std::string& value, double events);

// The most OpenMP threads a process runs per hardware thread: more only oversubscribes the machine (and a hundred
// thousand exhaust it: libgomp aborts).
inline constexpr int kMostThreadsPerCore = 4;

// Throws UsageError unless the threads asked for (`threads` of --threads, or OMP_NUM_THREADS where it is 0) are at
// most kMostThreadsPerCore per hardware thread.
void require_thread_count(int threads);

// Throws UsageError("<option>: <value> is invalid: <allowed>") unless `ok`.
void require(bool ok, const std::string& option, const std::string& value, const std::string& allowed);

// An output file the user named must go into an existing, writable directory (checked before any work).
void require_writable_parent(const std::string& option, const std::string& path);

// The most bytes any input file is read to (a calibration, a config.json, a timeline CSV are far less).
inline constexpr std::uintmax_t kMostInputBytes = std::uintmax_t{1} << 30;

// The one input policy: `path` is a regular file (a link to one is followed), readable and of at most `most` bytes,
// checked before a byte is read (a device such as /dev/zero would be read until memory ran out); its whole text.
// Throws UsageError naming `option` and the path otherwise.
std::string read_input_file(const std::string& option, const std::string& path, std::uintmax_t most = kMostInputBytes);

// The one output policy of every binary and tool (DESIGN.md, "Where things live"), checked before any work. An output is an
// option and the path it names (its directory checked by the caller: require_writable_parent for a path the user
// gave; a default folder may be created later); each must be named in UTF-8, and be absent
// or a regular file, never a symbolic link (it would be replaced by a file, not written through), a device, FIFO,
// socket or directory; no two outputs may be one file however spelled ("s.csv", "./s.csv", through a linked
// directory); no output may be one of the `inputs` (it would be destroyed before it is read). Throws UsageError
// naming the option, the path and what is allowed.
struct NamedPath {
  std::string option, path;
};
void require_output_policy(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

// The whole of `text` as a finite decimal number ("2.5", "1e3"; no hex, no "inf"/"nan", no surrounding spaces), or
// nothing.
std::optional<double> parse_number(const std::string& text);

// Splits "a,b,c" into its non-empty items.
std::vector<std::string> split_list(const std::string& text, char separator = ',');
// The items with `separator` between them: "a, b, c".
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

// An option whose values are the names of an enum, parsed once by CLI11 into the enum (code compares values, never
// names): `names` pairs each name with its value, in the order --help lists them.
template <typename E>
using Names = std::vector<std::pair<std::string, E>>;

template <typename E>
const std::string& name_of(const Names<E>& names, E value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  throw std::logic_error("name_of: a value without a name");
}

template <typename E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& flag, E& value, const Names<E>& names,
                             const std::string& help) {
  std::string list;
  for (const auto& [name, v] : names) list += (list.empty() ? "" : "|") + name;
  // The name becomes the enum's number for CLI11 to store; anything else (a number included) is refused.
  CLI::Validator by_name(
      [names, list](std::string& text) -> std::string {
        for (const auto& [name, v] : names) {
          if (name == text) {
            text = std::to_string(static_cast<long long>(v));
            return "";
          }
        }
        return "'" + text + "' is invalid: one of " + list;
      },
      "", "name");
  return app.add_option(flag, value, help)
      ->transform(by_name)
      ->type_name("{" + list + "}")
      ->default_str(name_of(names, value));
}

}  // namespace ob
