#include "common/options.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/iteration.hpp"
#include "common/metadata.hpp"

namespace ob {

void add_common_options(CLI::App& app, CommonOptions& options) {
  ob::add_checked_option(app, "--iters", options.iters, "Timed iterations per mode", CLI::Range(1, 1000000));
  ob::add_checked_option(app, "--warmup", options.warmup, "Untimed warm-up iterations per mode", CLI::Range(0, 100000));
  ob::add_checked_option(
      app, "--min-time-ms", options.min_time_ms,
      "Timed iterations beyond --iters until they fill this many ms, by the warm-up's step (at most " +
          std::to_string(kMostMinTimeIters) + "; 0: --iters only)",
      finite_in(0, 3.6e6));
  app.add_option("--csv", options.csv, "Summary CSV path (default: results/runs/<phase>-<date>.csv)");
  app.add_option("--timeline", options.timeline, "Timeline CSV path; a Chrome trace is written beside it");
  app.add_option("--seed", options.seed, "Seed of every random input")->capture_default_str();
  app.add_flag("--check", options.check, "Verify every result (collectives exactly, kernels against a reference)");
  app.add_flag("-q,--quiet", options.quiet, "Print only errors and the summary table");
  app.set_version_flag("--version", version_text(app.get_name()), "Print the version, commit and build, then exit");
}

namespace {

// Numbers are decimal everywhere: CLI11 itself reads "010" as octal and "0x10" as hex, takes -1 for an unsigned option,
// wraps 99999999999999999999999 to 2^64 - 1, calls "5 " out of range, and takes "0x1p3" for a float. Checked on argv
// before CLI11 sees it (its own range checks would speak first); returns "" or the error as CLI11 words its own.
std::string whole_number_error(const CLI::Option& option, const std::string& given) {
  std::string value = given;
  const bool is_signed = option.get_type_name().rfind("INT", 0) == 0;
  const std::size_t start = is_signed && !value.empty() && value[0] == '-' ? 1 : 0;
  while (option.get_type_name().find("SIZE") != std::string::npos && value.size() > start + 1 &&
         std::isalpha(static_cast<unsigned char>(value.back()))) {
    value.pop_back();  // a K/M/G(B) suffix, read by parse_size
  }
  bool digits = value.size() > start;
  for (std::size_t k = start; k < value.size(); ++k)
    digits = digits && std::isdigit(static_cast<unsigned char>(value[k]));
  const std::string name = "--" + option.get_lnames().front() + ": '" + given + "' ";
  if (!digits || (value.size() > start + 1 && value[start] == '0')) {
    return name + "is not a decimal whole number" + (is_signed ? "" : " >= 0") +
        " (digits only: no leading zeros, spaces or hex)";
  }
  errno = 0;
  if (is_signed) {
    (void)std::strtoll(value.c_str(), nullptr, 10);
  } else {
    (void)std::strtoull(value.c_str(), nullptr, 10);
  }
  return errno == ERANGE ? name + "is out of range (at most " +
          (is_signed ? std::to_string(std::numeric_limits<long long>::max())
                     : std::to_string(std::numeric_limits<unsigned long long>::max())) +
          ")"
                         : "";
}

std::string decimal_error(const CLI::App& app, int argc, char** argv) {
  auto numeric_option = [&](const std::string& name) -> const CLI::Option* {
    for (const CLI::Option* option : app.get_options()) {
      const std::string type = option->get_type_name();
      const bool numeric = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
      if (numeric && option->check_lname(name)) return option;
    }
    return nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token.rfind("--", 0) != 0 || token.size() < 3) continue;
    const auto equals = token.find('=');
    const bool inline_value = equals != std::string::npos;
    const CLI::Option* option = numeric_option(token.substr(2, inline_value ? equals - 2 : std::string::npos));
    if (!option) continue;
    if (!inline_value && i + 1 >= argc) continue;  // CLI11 reports the missing value
    const std::string given = inline_value ? token.substr(equals + 1) : argv[++i];
    if (given.empty()) return "--" + option->get_lnames().front() + ": '' is invalid: a number is needed";
    if (given == "auto" && option->get_type_name().find("|auto") != std::string::npos) continue;  // a word it takes
    if (option->get_type_name().rfind("FLOAT", 0) == 0) {
      std::vector<double> seen;  // a list names each value once: "1,1" would run one point twice, counted as two
      for (const auto& item : split_list(given, ',')) {
        const auto number = parse_number(item);
        if (!number) {
          return "--" + option->get_lnames().front() + ": '" + given +
              "' is not a finite decimal number (no hex, inf or nan)";
        }
        if (std::find(seen.begin(), seen.end(), *number) != seen.end()) {
          return "--" + option->get_lnames().front() + ": '" + given + "' is invalid: each value once";
        }
        seen.push_back(*number);
      }
      continue;
    }
    const std::string error = whole_number_error(*option, given);
    if (!error.empty()) return error;
  }
  return "";
}

}  // namespace

ParseOutcome parse_quietly(CLI::App& app, int argc, char** argv) {
  const std::string not_decimal = decimal_error(app, argc, argv);
  if (!not_decimal.empty()) return {kExitUsage, "", not_decimal};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {kExitOk, app.help(), ""};
  } catch (const CLI::CallForAllHelp&) {
    return {kExitOk, app.help("", CLI::AppFormatMode::All), ""};
  } catch (const CLI::CallForVersion& version) {
    return {kExitOk, std::string(version.what()) + "\n", ""};
  } catch (const CLI::ParseError& error) {
    return {kExitUsage, "", error.what()};
  } catch (const UsageError& error) {
    return {kExitUsage, "", error.what()};
  }
  return {};
}

std::optional<int> parse_options(CLI::App& app, int argc, char** argv, bool print) {
  const ParseOutcome outcome = parse_quietly(app, argc, argv);
  if (print && !outcome.help.empty()) std::cout << outcome.help;
  if (print && !outcome.error.empty()) std::cerr << app.get_name() << ": error: " << outcome.error << "\n";
  return outcome.exit;
}

std::optional<double> parse_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  for (char c : text) {  // decimal only: strtod would also take hex floats, "inf" and "nan"
    if (!std::isdigit(static_cast<unsigned char>(c)) && std::string("+-.eE").find(c) == std::string::npos) {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::uint64_t parse_size(const std::string& option, const std::string& text) {
  const std::string allowed = "a positive whole number, optionally with a K, M or G suffix (powers of 1024)";
  std::string body = text;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.pop_back();
  if (!body.empty() && (body.back() == 'b' || body.back() == 'B')) body.pop_back();
  std::uint64_t scale = 1;
  if (!body.empty()) {
    switch (std::toupper(static_cast<unsigned char>(body.back()))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) body.pop_back();
  }
  bool digits = !body.empty();
  for (char c : body) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  require(digits, option, text, allowed);
  std::uint64_t value = 0;
  try {
    value = std::stoull(body);
  } catch (const std::exception&) {
    require(false, option, text, allowed);
  }
  require(value > 0, option, text, allowed);
  require(value <= std::numeric_limits<std::uint64_t>::max() / scale, option, text, "a size that fits in 64 bits");
  return value * scale;
}

CLI::Option* add_size_option(CLI::App& app, const std::string& name, int& value, const std::string& help, int most) {
  return app.add_option(name, value, help)->transform(size_suffix())->check(CLI::Range(1, most))->capture_default_str();
}

CLI::Validator size_suffix() {
  return CLI::Validator(
      [](std::string& text) {
        try {
          text = std::to_string(parse_size("", text));
        } catch (const UsageError& error) {
          return std::string(error.what()).substr(2);  // CLI11 puts the option's name in front
        }
        return std::string();
      },
      "SIZE[K|M|G]", "size_suffix");
}

CLI::Validator finite_in(double lo, double hi) {
  const std::string allowed = "a finite number in [" + format_number(lo) + ", " + format_number(hi) + "]";
  return CLI::Validator(
      [lo, hi, allowed](std::string& text) {
        double value = 0;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(value) || value < lo || value > hi) {
          return "'" + text + "' is invalid: " + allowed;
        }
        return std::string();
      },
      "FLOAT in [" + format_number(lo) + ", " + format_number(hi) + "]", "finite_in");
}

void require_fits_in_host_memory(const std::string& option, const std::string& value, double bytes) {
  const double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  require(bytes <= 0.5 * physical, option, value,
          "needs " + format_number(bytes / (1u << 30), 3) + " GiB of host memory; at most half of this machine's " +
              format_number(physical / (1u << 30), 3) + " GiB is allowed");
}

void require_thread_count(int threads) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int wanted = threads > 0 ? threads : omp_get_max_threads();
  require(wanted <= kMostThreadsPerCore * cores, threads > 0 ? "--threads" : "OMP_NUM_THREADS", std::to_string(wanted),
          "at most " + std::to_string(kMostThreadsPerCore) + " x this machine's " + std::to_string(cores) +
              " hardware threads");
}

void require_stated_length(const std::string& option, const std::string& value, double seconds) {
  require(seconds <= kLongestStatedRunS, option, value,
          "the run would take " + format_number(seconds / 3600, 3) + " hours by its own figures, at most " +
              format_number(kLongestStatedRunS / 3600) + " are started");
}

void require_timeline_fits(const std::string& option, const std::string& value, double events) {
  require(events <= kMostTimelineEvents, option, value,
          "the run would keep " + format_number(events, 3) + " timeline events, at most " +
              format_number(kMostTimelineEvents, 3) + " fit in memory: fewer chunks or --iters");
}

void require(bool ok, const std::string& option, const std::string& value, const std::string& allowed) {
  if (!ok) throw UsageError(option + ": '" + value + "' is invalid: " + allowed);
}

std::string read_input_file(const std::string& option, const std::string& path, std::uintmax_t most) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto status = fs::status(path, error);
  require(!error && fs::exists(status), option, path, "no such file");
  require(fs::is_regular_file(status), option, path, "a regular file (it is a directory, device, FIFO or socket)");
  const auto size = fs::file_size(path, error);
  require(!error && size <= most, option, path,
          "a file of at most " + std::to_string(most) + " bytes (it holds " + std::to_string(size) + ")");
  std::ifstream file(path, std::ios::binary);
  require(file.good(), option, path, "a readable file");
  std::string text(static_cast<std::size_t>(size), '\0');
  file.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return text;
}

void require_writable_parent(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  require(!path.empty(), option, path, "a file path");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code error;
  require(fs::is_directory(parent, error), option, path, "its directory must exist");
  require(::access(parent.c_str(), W_OK) == 0, option, path, "its directory must be writable");
  require(!fs::is_directory(path, error), option, path, "a file path, not a directory");
}

namespace {
// One file's identity however it is spelled: the canonical form of its directory (links resolved) and its name.
std::filesystem::path identity(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path absolute = fs::absolute(fs::path(path), error).lexically_normal();
  const fs::path parent = fs::weakly_canonical(absolute.parent_path(), error);
  return parent / absolute.filename();
}

bool valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = byte < 0x80 ? 1
        : (byte >> 5) == 0x6               ? 2
        : (byte >> 4) == 0xE               ? 3
        : (byte >> 3) == 0x1E              ? 4
                                           : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    }
    i += length;
  }
  return true;
}
}  // namespace

// NAME_MAX of Linux's file systems less the staging suffix a file is first written under (".tmp.<pid>",
// common/atomic_file.cpp): a longer name would fail only after the run, when its files are written.
constexpr std::size_t kLongestFileName = 255 - 16;

void require_output_policy(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  namespace fs = std::filesystem;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    const std::string name = option.substr(0, option.find(' '));
    require(valid_utf8(path), name, path, "a path in UTF-8");
    const std::string file = fs::path(path).filename().string();
    require(file.size() <= kLongestFileName, name, path,
            "a name that leaves room for its run's files: " + option + " would write '" + file + "', " +
                std::to_string(file.size()) + " bytes, over the " + std::to_string(kLongestFileName) +
                " a file name may have here (255 less the staging suffix)");
    std::error_code error;
    const auto status = fs::symlink_status(path, error);
    require(!fs::is_symlink(status), name, path,
            "not a symbolic link (it would be replaced, not written through): name the file it points to");
    require(!fs::exists(status) || fs::is_regular_file(status), name, path,
            "a regular file (it is a directory, device, FIFO or socket): " + option + " would write " + path);
    for (std::size_t j = 0; j < i; ++j) {
      require(identity(path) != identity(outputs[j].path), name, path,
              "a path of its own: " + option + " and " + outputs[j].option + " would both write it");
    }
    for (const auto& input : inputs) {
      const bool same = identity(path) == identity(input.path) ||
          (fs::exists(path, error) && fs::exists(input.path, error) && fs::equivalent(path, input.path, error));
      require(!same, name, path, "not the file " + input.option + " reads (it would be destroyed before it is read)");
    }
  }
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, separator)) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

}  // namespace ob
