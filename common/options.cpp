#include "common/options.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/iteration.hpp"
#include "common/metadata.hpp"
#include "common/path_options.hpp"

namespace ob {

void add_common_options(CLI::App& app, CommonOptions& options) {
  ob::add_checked_option(app, "--iters", options.iters, "Timed iterations per mode", CLI::Range(1, 1000000));
  ob::add_checked_option(app, "--warmup", options.warmup, "Untimed warm-up iterations per mode", CLI::Range(0, 100000));
  ob::add_checked_option(
      app, "--min-time-ms", options.min_time_ms,
      "Timed iterations beyond --iters until they fill this many ms, by the warm-up's step (at most " +
          std::to_string(kMostMinTimeIters) + "; 0: --iters only)",
      finite_in(0, 3.6e6));
  add_output_option(app, "--csv", options.csv, "Summary CSV path (default: results/runs/<phase>-<date>.csv)");
  add_output_option(app, "--timeline", options.timeline, "Timeline CSV path; a Chrome trace is written beside it");
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

// A repeatable option (a value each time it is given: --calibration A --calibration B) given one value twice would
// run, or count, one thing twice: "" or the error naming it.
std::string repeated_value_error(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_type_size_max() != 1 || option->get_expected_max() <= 1) continue;
    const auto& given = option->results();
    for (std::size_t i = 0; i < given.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (given[i] == given[j]) {
          return option->get_name() + ": '" + given[i] + "' is invalid: given twice (each value once)";
        }
      }
    }
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
  const std::string repeated = repeated_value_error(app);
  if (!repeated.empty()) return {kExitUsage, "", repeated};
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
          "the run would take " + format_number(seconds / 3600, 3) +
              " hours by its own figures; runs stated longer than " + format_number(kLongestStatedRunS / 60) +
              " minutes are not started (fewer --iters or chunks, shorter steps)");
}

void require_timeline_fits(const std::string& option, const std::string& value, double events) {
  require(events <= kMostTimelineEvents, option, value,
          "the run would keep " + format_number(events, 3) + " timeline events, at most " +
              format_number(kMostTimelineEvents, 3) + " fit in memory: fewer chunks or --iters");
}

void require(bool ok, const std::string& option, const std::string& value, const std::string& allowed) {
  if (!ok) throw UsageError(option + ": '" + value + "' is invalid: " + allowed);
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
