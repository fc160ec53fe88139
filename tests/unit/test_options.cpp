#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/metadata.hpp"
#include "common/options.hpp"
#include "common/rank_agreement.hpp"
#include "common/run_output.hpp"

namespace {

struct Parsed {
  std::optional<int> exit;
  ob::CommonOptions options;
  std::uint64_t size = 0;
};

Parsed parse(std::vector<std::string> args) {
  Parsed parsed;
  CLI::App app("test", "prog");
  ob::add_common_options(app, parsed.options);
  app.add_option("--size", parsed.size)->transform(ob::size_suffix());
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  parsed.exit = ob::parse_options(app, static_cast<int>(argv.size()), argv.data(), false);
  return parsed;
}

}  // namespace

TEST(CommonOptions, DefaultsAndValues) {
  auto p = parse({});
  EXPECT_FALSE(p.exit.has_value());
  EXPECT_EQ(p.options.iters, 20);
  EXPECT_EQ(p.options.warmup, 3);
  EXPECT_FALSE(p.options.check);
  p = parse({"--iters", "7", "--warmup", "0", "--seed", "99", "--check", "--quiet", "--size", "2K"});
  ASSERT_FALSE(p.exit.has_value());
  EXPECT_EQ(p.options.iters, 7);
  EXPECT_EQ(p.options.warmup, 0);
  EXPECT_EQ(p.options.seed, 99u);
  EXPECT_TRUE(p.options.check);
  EXPECT_TRUE(p.options.quiet);
  EXPECT_EQ(p.size, 2048u);
}

TEST(CommonOptions, HelpExitsZero) { EXPECT_EQ(parse({"--help"}).exit, 0); }

TEST(CommonOptions, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"--iters", "0"},   {"--iters", "-3"},  {"--iters", "abc"}, {"--iters", "1.5"},         {"--iters", ""},
      {"--warmup", "-1"}, {"--seed", "x"},    {"--size", "0"},    {"--size", "-4"},           {"--size", "4Q"},
      {"--size", "K"},    {"--unknown-flag"}, {"--iters"},        {"--iters", "99999999999"},
  };
  for (const auto& args : bad) {
    EXPECT_EQ(parse(args).exit, ob::kExitUsage) << args[0] << " " << (args.size() > 1 ? args[1] : "");
  }
}

TEST(ParseSize, Suffixes) {
  EXPECT_EQ(ob::parse_size("--n", "64"), 64u);
  EXPECT_EQ(ob::parse_size("--n", "4k"), 4096u);
  EXPECT_EQ(ob::parse_size("--n", "4K"), 4096u);
  EXPECT_EQ(ob::parse_size("--n", "2M"), 2u << 20);
  EXPECT_EQ(ob::parse_size("--n", "1G"), 1u << 30);
  EXPECT_EQ(ob::parse_size("--n", "3KB"), 3072u);
}

TEST(ParseSize, ErrorNamesOptionValueAndWhatIsAllowed) {
  for (const std::string bad : {"0", "-1", "1.5", "", "M", "12X", "nan", "99999999999999G"}) {
    try {
      ob::parse_size("--batch", bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const ob::UsageError& error) {
      const std::string what = error.what();
      EXPECT_EQ(what.rfind("--batch: '" + bad + "' is invalid: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
    }
  }
}

TEST(OutputPaths, DefaultsAndDerivedNames) {
  ob::CommonOptions options;
  auto paths = ob::resolve_output_paths("phase9", options);
  EXPECT_EQ(paths.summary_csv.rfind("results/runs/phase9-", 0), 0u);
  options.csv = "out.csv";
  options.timeline = "tl.csv";
  paths = ob::resolve_output_paths("phase9", options);
  EXPECT_EQ(paths.summary_csv, "out.csv");
  EXPECT_EQ(paths.meta_json, "out.meta.json");
  EXPECT_EQ(paths.timeline_csv, "tl.csv");
  EXPECT_EQ(paths.trace_json, "tl.trace.json");
  options.timeline.clear();
  EXPECT_EQ(ob::resolve_output_paths("p", options).timeline_csv, "out.timeline.csv");
}

TEST(OutputPaths, MissingOrUnwritableDirectoryIsAUsageError) {
  ob::CommonOptions options;
  options.csv = "/nonexistent-dir-ob/out.csv";
  EXPECT_THROW(ob::resolve_output_paths("p", options), ob::UsageError);
  options.csv = std::filesystem::temp_directory_path().string();  // a directory, not a file
  EXPECT_THROW(ob::resolve_output_paths("p", options), ob::UsageError);
  options.csv.clear();
  options.timeline = "/nonexistent-dir-ob/t.csv";
  EXPECT_THROW(ob::resolve_output_paths("p", options), ob::UsageError);
  if (::geteuid() != 0) {
    options.timeline = "/proc/t.csv";
    EXPECT_THROW(ob::resolve_output_paths("p", options), ob::UsageError);
  }
}

TEST(SplitList, SkipsEmptyItems) {
  EXPECT_EQ(ob::split_list("5,10,,20"), (std::vector<std::string>{"5", "10", "20"}));
  EXPECT_TRUE(ob::split_list("").empty());
}

TEST(Options, ParseNumberIsStrictDecimal) {
  EXPECT_EQ(ob::parse_number("2.5"), 2.5);
  EXPECT_EQ(ob::parse_number("1e3"), 1000.0);
  EXPECT_EQ(ob::parse_number("010"), 10.0);
  for (const char* bad : {"", " 1", "1 ", "0x10", "inf", "nan", "1,5", "abc", "1e999"}) {
    EXPECT_FALSE(ob::parse_number(bad).has_value()) << bad;
  }
}

TEST(CommonOptions, WholeNumbersAreDecimalEverywhere) {
  auto p = parse({"--iters", "10", "--warmup", "0", "--seed", "18446744073709551615", "--size", "4K"});
  ASSERT_FALSE(p.exit.has_value());
  EXPECT_EQ(p.options.iters, 10);
  EXPECT_EQ(p.size, 4096u);
  // CLI11 alone reads 010 as 8 and 0x10 as 16, takes -1 for an unsigned seed and calls "5 " out of range.
  for (std::vector<std::string> bad : {std::vector<std::string>{"--iters", "010"},
                                       {"--iters", "0x10"},
                                       {"--iters", "5 "},
                                       {"--iters", " 5"},
                                       {"--iters", "+5"},
                                       {"--seed", "-1"},
                                       {"--seed", "0x10"},
                                       {"--warmup", "00"},
                                       {"--size", "0x10"}}) {
    EXPECT_EQ(parse(bad).exit, std::optional<int>(ob::kExitUsage)) << bad[0] << " " << bad[1];
  }
  ASSERT_FALSE(parse({"--warmup", "0"}).exit.has_value());
}

TEST(RankAgreement, FirstDifferenceNamesTheOptionAndBothValues) {
  const std::string a = "iters=20\nlr=0.01\ncsv=\"x.csv\"\ncommit=abc\n";
  EXPECT_EQ(ob::first_difference(a, 0, a, 1), "");
  // Values, not spellings: 0.01 and 1e-2 are one learning rate.
  EXPECT_EQ(ob::first_difference(a, 0, "iters=20\nlr=1e-2\ncsv=\"x.csv\"\ncommit=abc\n", 1), "");
  EXPECT_EQ(ob::first_difference(a, 0, "iters=20\nlr=0.02\ncsv=\"y.csv\"\ncommit=abc\n", 3),
            "--lr: rank 0 has 0.01, rank 3 has 0.02");
  EXPECT_EQ(ob::first_difference(a, 0, "iters=20\nlr=0.01\ncsv=\"x.csv\"\ncommit=def\n", 1),
            "the binary's commit: rank 0 has abc, rank 1 has def");
  // The environment's part (issue 83: an MPMD launch with OMP_NUM_THREADS 1 and 2 and --threads 0)
  EXPECT_EQ(ob::first_difference(a + "OMP_NUM_THREADS=1\n", 0, a + "OMP_NUM_THREADS=2\n", 1),
            "the OpenMP threads (OMP_NUM_THREADS, --threads 0): rank 0 has 1, rank 1 has 2");
}

TEST(OutputPaths, EveryOutputARegularFileOnAPathOfItsOwn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ob_paths_" + std::to_string(::getpid()));
  fs::create_directories(dir / "adir.csv");
  ::mkfifo((dir / "fifo.csv").c_str(), 0600);
  auto resolve = [&](const std::string& csv, const std::string& timeline) {
    ob::CommonOptions options;
    options.csv = csv;
    options.timeline = timeline;
    return ob::resolve_output_paths("phase2", options);
  };
  EXPECT_NO_THROW(resolve((dir / "run.csv").string(), ""));
  EXPECT_THROW(resolve("/dev/null", ""), ob::UsageError);  // a device
  EXPECT_THROW(resolve((dir / "fifo.csv").string(), ""), ob::UsageError);  // a FIFO
  EXPECT_THROW(resolve((dir / "adir.csv").string(), ""), ob::UsageError);  // a directory
  EXPECT_THROW(resolve((dir / "run.csv").string(), (dir / "run.csv").string()), ob::UsageError);  // one path twice
  EXPECT_THROW(resolve((dir / "run.csv").string(), (dir / "run.meta.json").string()), ob::UsageError);
  EXPECT_THROW(resolve((dir / "run\xff.csv").string(), ""), ob::UsageError);  // not UTF-8
  try {
    resolve((dir / "run.csv").string(), (dir / "." / "run.csv").string());
    FAIL();
  } catch (const ob::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("--timeline and --csv would both write it"), std::string::npos)
        << error.what();
  }
  fs::remove_all(dir);
}

TEST(CommonOptions, VersionNamesTheCommitAndTheBuildAndExitsZero) {
  CLI::App app("test", "prog");
  ob::CommonOptions options;
  ob::add_common_options(app, options);
  std::vector<std::string> args = {"prog", "--version"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  const auto outcome = ob::parse_quietly(app, static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(outcome.exit, 0);
  EXPECT_EQ(outcome.help.rfind("prog (overlap-bench ", 0), 0u) << outcome.help;
  EXPECT_NE(outcome.help.find("commit " + ob::build_commit()), std::string::npos) << outcome.help;
  EXPECT_NE(outcome.help.find(" build, "), std::string::npos) << outcome.help;
}

TEST(Metadata, NamesTheBuildTheSchemaAndTheEnvironmentThatMatters) {
  setenv("NCCL_TEST_SETTING", "on", 1);
  setenv("OB_UNRELATED_SETTING", "x", 1);
  char name[] = "prog";
  char* argv[] = {name};
  const auto meta = ob::base_metadata("phaseX", 1, argv);
  EXPECT_EQ(meta["schema_version"], ob::kMetadataSchemaVersion);
  EXPECT_FALSE(meta["build"]["type"].get<std::string>().empty());
  EXPECT_FALSE(meta["build"]["compiler"].get<std::string>().empty());
  EXPECT_EQ(meta["environment"]["NCCL_TEST_SETTING"], "on");
  EXPECT_FALSE(meta["environment"].contains("OB_UNRELATED_SETTING"));
  unsetenv("NCCL_TEST_SETTING");
  unsetenv("OB_UNRELATED_SETTING");
}
