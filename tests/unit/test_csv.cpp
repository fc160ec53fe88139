#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/atomic_file.hpp"
#include "common/csv_writer.hpp"
#include "common/errors.hpp"

namespace fs = std::filesystem;

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(ob::csv_field("plain"), "plain");
  EXPECT_EQ(ob::csv_field(""), "");
  EXPECT_EQ(ob::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(ob::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(ob::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(ob::csv_field("cr\r"), "\"cr\r\"");
}

TEST(CsvTable, HeaderThenRowsWithCrlf) {
  ob::CsvTable table({"name", "time_ms"});
  table.add_row({"x,y", "1.5"});
  EXPECT_EQ(table.to_string(), "name,time_ms\r\n\"x,y\",1.5\r\n");
}

TEST(CsvTable, RejectsRowOfWrongWidth) {
  ob::CsvTable table({"a", "b"});
  EXPECT_THROW(table.add_row({"1"}), std::invalid_argument);
  EXPECT_THROW(table.add_row({"1", "2", "3"}), std::invalid_argument);
  EXPECT_THROW(ob::CsvTable({}), std::invalid_argument);
}

TEST(FormatNumber, SpecialValuesAndPrecision) {
  EXPECT_EQ(ob::format_number(std::nan("")), "nan");
  EXPECT_EQ(ob::format_number(INFINITY), "inf");
  EXPECT_EQ(ob::format_number(-INFINITY), "-inf");
  EXPECT_EQ(ob::format_number(0.25), "0.25");
  EXPECT_EQ(ob::format_number(123456789.0), "123456789");
  EXPECT_EQ(ob::format_number(1.0 / 3.0, 4), "0.3333");
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ob_atomic_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  std::size_t files_in_dir() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesWholeContentAndLeavesNoTemporary) {
  const auto path = (dir_ / "out.csv").string();
  ob::write_file_atomic(path, "a,b\r\n1,2\r\n");
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "a,b\r\n1,2\r\n");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(AtomicFileTest, ReplacesAnExistingFileWhole) {
  const auto path = (dir_ / "out.csv").string();
  ob::write_file_atomic(path, "old content that is longer");
  ob::write_file_atomic(path, "new");
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "new");
}

TEST_F(AtomicFileTest, MissingDirectoryThrowsAndWritesNothing) {
  const auto path = (dir_ / "missing" / "out.csv").string();
  try {
    ob::write_file_atomic(path, "x");
    FAIL() << "expected a CallFailure";
  } catch (const ob::CallFailure& error) {
    EXPECT_EQ(error.library(), "I/O");
    EXPECT_NE(std::string(error.what()).find("missing"), std::string::npos) << error.what();
  }
  EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(AtomicFileTest, ReadOnlyDirectoryThrowsAndLeavesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(ob::write_file_atomic((dir_ / "out.csv").string(), "x"), ob::CallFailure);
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_EQ(files_in_dir(), 0u);
}

namespace {
std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

// A full disk while a set is staged (simulated with RLIMIT_FSIZE: writes past the limit fail with EFBIG): the old
// set stays whole, no temporary is left.
TEST_F(AtomicFileTest, AFullDiskWhileStagingLeavesTheOldSetWhole) {
  const auto summary = dir_ / "run.csv", timeline = dir_ / "run.timeline.csv";
  {
    ob::FileSet old;
    old.stage(timeline.string(), "old timeline");
    old.stage(summary.string(), "old summary");
    old.commit();
  }
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1 << 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  {
    ob::FileSet set;
    set.stage(timeline.string(), "new timeline");
    try {
      set.stage(summary.string(), std::string(1 << 20, 'x'));  // past the limit
    } catch (const ob::CallFailure&) {
      threw = true;
    }
  }  // the uncommitted set removes its temporaries
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_TRUE(threw);
  EXPECT_EQ(read_all(timeline), "old timeline");
  EXPECT_EQ(read_all(summary), "old summary");
  EXPECT_EQ(files_in_dir(), 2u);
}

TEST_F(AtomicFileTest, ACommittedSetReplacesEveryFile) {
  const auto a = dir_ / "a.csv", b = dir_ / "b.csv";
  ob::write_file_atomic(a.string(), "old a");
  ob::FileSet set;
  set.stage(a.string(), "new a");
  set.stage(b.string(), "new b");
  EXPECT_EQ(read_all(a), "old a");  // nothing is visible before the commit
  EXPECT_FALSE(fs::exists(b));
  set.commit();
  EXPECT_EQ(read_all(a), "new a");
  EXPECT_EQ(read_all(b), "new b");
  EXPECT_EQ(files_in_dir(), 2u);
}

TEST_F(AtomicFileTest, ASignalDuringTheRenamesWaitsForTheWholeSet) {
  // A child stages a set of 24 files over an old set, starts committing, and a thread of its own sends it SIGTERM
  // the moment the first new file appears: the child ends with 143 and every file is new (never new beside old).
  constexpr int kFiles = 24;
  for (int i = 0; i < kFiles; ++i) ob::write_file_atomic((dir_ / ("f" + std::to_string(i))).string(), "old");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ob::install_signal_cleanup();
    ob::FileSet set;
    for (int i = 0; i < kFiles; ++i) set.stage((dir_ / ("f" + std::to_string(i))).string(), std::string(1 << 20, 'n'));
    std::thread watcher([&] {
      while (fs::file_size(dir_ / "f0") == 3) {}
      ::kill(::getpid(), SIGTERM);
    });
    set.commit();
    watcher.join();
    ::pause();  // the signal ends the process; never here for long
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  for (int i = 0; i < kFiles; ++i) EXPECT_EQ(fs::file_size(dir_ / ("f" + std::to_string(i))), 1u << 20) << i;
  EXPECT_EQ(files_in_dir(), static_cast<std::size_t>(kFiles));  // no temporary left
}

TEST(CsvParse, ReadsBackWhatToStringWrites) {
  ob::CsvTable table({"a", "b,c", "d"});
  table.add_row({"1", "x \"quoted\", and, commas", "two\r\nlines"});
  table.add_row({"", "2.5", "-"});
  const auto back = ob::CsvTable::parse(table.to_string());
  EXPECT_EQ(back.header(), table.header());
  EXPECT_EQ(back.rows(), table.rows());
  // LF line ends and no final line end read the same.
  const auto lf = ob::CsvTable::parse("a,b\n1,2\n3,4");
  ASSERT_EQ(lf.rows().size(), 2u);
  EXPECT_EQ(lf.rows()[1], (std::vector<std::string>{"3", "4"}));
}

TEST(CsvParse, RefusesRaggedRowsAndOpenQuotesNamingTheLine) {
  try {
    ob::CsvTable::parse("a,b\n1,2\n3\n");
    FAIL() << "a short row was read";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "line 3: 1 fields, the header has 2");
  }
  EXPECT_THROW(ob::CsvTable::parse("a,b\n1,\"open\n"), std::invalid_argument);
  EXPECT_THROW(ob::CsvTable::parse(""), std::invalid_argument);
}
