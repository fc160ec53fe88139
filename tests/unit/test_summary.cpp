#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "common/csv_schema.hpp"
#include "common/modes.hpp"
#include "common/overlap_rows.hpp"
#include "common/summary.hpp"
#include "common/timeline.hpp"

namespace {

ob::SummaryRow measured(ob::Mode mode, double ms, double compute_total) {
  ob::SummaryRow row;
  row.mode = mode;
  row.ranks = 2;
  row.chunks = 5;
  row.iters = 10;
  row.time_ms = ob::summarize({ms});
  row.config("hidden", 512).config("workload", "synthetic");
  row.set("compute_total_ms_p50", compute_total);
  return row;
}

}  // namespace

TEST(Summary, LeadingColumnsThenFieldsInFirstSeenOrder) {
  std::vector<ob::SummaryRow> rows = {measured(ob::Mode::kCompute, 100, 100), measured(ob::Mode::kComm, 50, 0),
                                      measured(ob::Mode::kSeq, 150, 100), measured(ob::Mode::kOverlap, 110, 105)};
  ob::OverlapInputs inputs;
  inputs.compute_time_field = "compute_total_ms_p50";
  inputs.bound_ms = 104;
  ob::derive_overlap_rows(rows, rows.front(), inputs);
  const auto table = ob::summary_csv("phase2", rows);
  const auto& h = table.header();
  ASSERT_GE(h.size(), 10u);
  const std::vector<std::string> leading = {"system", "phase",       "mode",        "ranks",       "chunks",
                                            "iters",  "time_ms_p50", "time_ms_p95", "time_ms_min", "time_ms_max"};
  EXPECT_TRUE(std::equal(leading.begin(), leading.end(), h.begin()));
  EXPECT_EQ(h[12], "time_ms_p50_ci_rel");
  EXPECT_EQ(h[13], "unstable");
  EXPECT_EQ(h[14], "hidden");
  EXPECT_EQ(h[15], "workload");
  EXPECT_EQ(h[16], "compute_total_ms_p50");
  EXPECT_EQ(h[17], "speedup");
  const auto& seq = table.rows()[2];
  EXPECT_EQ(seq[0], "overlap-bench");
  EXPECT_EQ(seq[1], "phase2");
  EXPECT_EQ(seq[2], "seq");
  EXPECT_EQ(seq[6], "150");
  EXPECT_EQ(seq[17], "");  // no speedup on the sequential row
  EXPECT_EQ(table.rows()[3][17], ob::format_number(150.0 / 110.0));
  const ob::SummaryRow& overlap = rows[3];
  EXPECT_EQ(overlap.get("overlap_efficiency"), "0.8");  // (100 + 50 - 110) / 50
  EXPECT_EQ(overlap.get("overlap_pct"), "80");
  EXPECT_DOUBLE_EQ(overlap.number("compute_slowdown"), 0.05);  // 105 against 100
  // ideal, then bound, carrying the configuration but no measurement of the row they were made from
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[4].mode, ob::Mode::kIdeal);
  EXPECT_DOUBLE_EQ(rows[4].time_ms.p50, 100);
  EXPECT_EQ(rows[5].mode, ob::Mode::kBound);
  EXPECT_DOUBLE_EQ(rows[5].time_ms.p50, 104);
  EXPECT_EQ(rows[5].get("hidden"), "512");
  EXPECT_FALSE(rows[5].has("compute_total_ms_p50"));
  EXPECT_EQ(ob::config_columns(rows),
            (std::vector<std::string>{"system", "phase", "ranks", "chunks", "iters", "hidden", "workload"}));
}

TEST(Summary, NoIdealWithoutComputeAndCommButABoundWhenGiven) {
  std::vector<ob::SummaryRow> rows = {measured(ob::Mode::kOverlap, 110, 105)};
  ob::OverlapInputs inputs;
  inputs.bound_ms = 90;
  ob::derive_overlap_rows(rows, rows.front(), inputs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].mode, ob::Mode::kBound);
  EXPECT_FALSE(rows[0].has("speedup"));
}

// A phase's own overlapped mode, registered here as a phase registers it (common/ does not list it).
const ob::Mode kBeside = ob::register_mode("beside", ob::ModeKind::kOverlapped);

TEST(Summary, SeqMissingMeansCompPlusComm) {
  std::vector<ob::SummaryRow> rows = {measured(ob::Mode::kCompute, 100, 100), measured(ob::Mode::kComm, 50, 0),
                                      measured(kBeside, 120, 100)};
  ob::derive_overlap_rows(rows, rows.front(), {});
  EXPECT_DOUBLE_EQ(rows[2].number("speedup"), 150.0 / 120.0);
  EXPECT_FALSE(rows[2].has("compute_slowdown"));  // no compute-time field named
  EXPECT_EQ(rows.back().mode, ob::Mode::kIdeal);
}

TEST(Summary, SetReplacesAndKeepsNumbers) {
  ob::SummaryRow row;
  row.set("tf32", true).set("x", 1.5).set("x", 2.5).set("n", std::size_t{3}).set("name", "ring");
  EXPECT_EQ(row.get("tf32"), "1");
  EXPECT_EQ(row.get("x"), "2.5");
  EXPECT_DOUBLE_EQ(row.number("x"), 2.5);
  EXPECT_EQ(row.get("n"), "3");
  EXPECT_DOUBLE_EQ(row.number("n"), 3);
  EXPECT_TRUE(std::isnan(row.number("name")));
  EXPECT_TRUE(std::isnan(row.number("absent")));
  EXPECT_EQ(row.fields.size(), 4u);
  EXPECT_EQ(row.get("absent"), "");
}

TEST(Summary, ConsoleShortensNumbersAndMarksAbsentFields) {
  std::vector<ob::SummaryRow> rows = {measured(ob::Mode::kSeq, 1.23456789, 1)};
  rows[0].set("x", 3.14159265);
  const std::string text = ob::render_summary(rows, {{"x", "", "x"}, {"y", "", "y"}});
  EXPECT_NE(text.find("3.142"), std::string::npos) << text;
  EXPECT_NE(text.find(" -"), std::string::npos) << text;
}

TEST(Summary, ConsoleSaysWhatIsNotResolvedOrOutOfRange) {
  // Overlapped 100 ms against seq 101 ms: iterations noisy enough that the speedup's interval holds 1.
  std::vector<double> seq, overlap, compute(20, 60.0), comm(20, 40.0);
  for (int i = 0; i < 20; ++i) {
    seq.push_back(101 + 8 * std::sin(i * 1.3));
    overlap.push_back(100 + 8 * std::cos(i * 2.1));
  }
  std::vector<ob::SummaryRow> rows(4);
  rows[0].mode = ob::Mode::kCompute;
  rows[0].set_times(compute);
  rows[1].mode = ob::Mode::kComm;
  rows[1].set_times(comm);
  rows[2].mode = ob::Mode::kSeq;
  rows[2].set_times(seq);
  rows[3].mode = ob::Mode::kOverlap;
  rows[3].set_times(overlap);
  EXPECT_EQ(rows[3].samples, overlap);
  ob::derive_overlap_rows(rows, ob::SummaryRow{}, {});
  EXPECT_LE(rows[3].number("speedup_ci_lo"), 1.0);
  EXPECT_GE(rows[3].number("speedup_ci_hi"), 1.0);
  std::string text = ob::render_summary(rows, {{"speedup", "x", "speedup"}});
  EXPECT_NE(text.find("n.r."), std::string::npos) << text;
  EXPECT_NE(text.find("# n.r.: not resolved"), std::string::npos) << text;
  EXPECT_NE(text.find("METRICS.md"), std::string::npos) << text;
  // Efficiency far above 1 (an isolated run much slower than its share of the overlapped one) is flagged.
  ob::SummaryRow odd;
  odd.mode = ob::Mode::kOverlap;
  odd.set("overlap_efficiency", 5.41);
  text = ob::render_summary({odd}, {{"efficiency", "", "overlap_efficiency"}});
  EXPECT_NE(text.find("5.41!"), std::string::npos) << text;
  EXPECT_NE(text.find("# !: outside"), std::string::npos) << text;
}

TEST(Summary, EveryMeasuredRowCarriesItsSpreadAndAWideOneIsUnstable) {
  std::vector<double> steady, wide;
  for (int i = 0; i < 30; ++i) {
    steady.push_back(10.0 + 0.01 * std::sin(i));  // +-0.1 %
    wide.push_back(10.0 * (1 + 0.5 * std::sin(i * 1.7)));  // +-50 %
  }
  std::vector<ob::SummaryRow> rows(2);
  rows[0].mode = ob::Mode::kSeq;
  rows[0].set_times(steady);
  rows[1].mode = ob::Mode::kOverlap;
  rows[1].set_times(wide);
  rows.push_back(ob::derived_row(ob::Mode::kIdeal, 10.0, rows[0]));
  EXPECT_LT(rows[0].time_ci_rel, 0.002);
  EXPECT_FALSE(rows[0].unstable());
  EXPECT_GT(rows[1].time_ci_rel, ob::kUnstableCiRel);
  EXPECT_TRUE(rows[1].unstable());
  EXPECT_TRUE(std::isnan(rows[2].time_ci_rel));  // a derived row has no iterations
  const auto table = ob::summary_csv("phase2", rows);
  EXPECT_EQ(table.rows()[0][13], "0");
  EXPECT_EQ(table.rows()[1][13], "1");
  EXPECT_EQ(table.rows()[2][12], "");
  EXPECT_EQ(table.rows()[2][13], "0");
  const std::string text = ob::render_summary(rows, {});
  EXPECT_NE(text.find("~"), std::string::npos) << text;
  EXPECT_NE(text.find("# ~: unstable"), std::string::npos) << text;
  EXPECT_EQ(ob::render_summary({rows[0]}, {}).find("~"), std::string::npos);
}

TEST(Modes, NamesRoundTripAndRunOrderIsFixed) {
  const ob::Mode later = ob::register_mode("later", ob::ModeKind::kOverlapped);
  const ob::Mode other = ob::register_mode("other", ob::ModeKind::kOther);
  for (auto mode : {ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, ob::Mode::kOverlap, kBeside, later, other,
                    ob::Mode::kIdeal, ob::Mode::kBound, ob::Mode::kBoundRef}) {
    EXPECT_EQ(ob::parse_mode(ob::mode_name(mode)), mode);
  }
  EXPECT_EQ(ob::register_mode("beside", ob::ModeKind::kOverlapped), kBeside);  // once per name
  EXPECT_THROW(ob::register_mode("beside", ob::ModeKind::kDerived), std::logic_error);
  EXPECT_THROW(ob::parse_mode("all"), std::invalid_argument);
  EXPECT_EQ(ob::in_run_order({other, later, ob::Mode::kSeq, ob::Mode::kComm, kBeside, ob::Mode::kCompute,
                              ob::Mode::kSeq, ob::Mode::kOverlap}),
            (std::vector<ob::Mode>{ob::Mode::kCompute, ob::Mode::kComm, ob::Mode::kSeq, ob::Mode::kOverlap, kBeside,
                                   later, other}));
  EXPECT_TRUE(ob::is_overlapped(kBeside));
  EXPECT_FALSE(ob::is_overlapped(ob::Mode::kSeq));
  EXPECT_TRUE(ob::is_derived(ob::Mode::kBoundRef));
}

TEST(ModeRow, TimesThenThePhasesColumnsThenBandwidthAndTheCheck) {
  ob::SummaryRow base;
  base.config("hidden", 8);
  ob::ModeSamples comm{ob::Mode::kComm, {4.0, 2.0, 3.0}};  // one process: its own times
  comm.allreduce_bytes = 3e6;
  comm.wrong = 0;
  const auto row = ob::mode_row(base, comm, [](ob::SummaryRow& r) { r.set("chunk_comm_ms_p50", 1.5); });
  EXPECT_EQ(row.mode, ob::Mode::kComm);
  EXPECT_DOUBLE_EQ(row.time_ms.p50, 3.0);
  EXPECT_DOUBLE_EQ(row.number("algbw_GBps"), 1.0);  // 3 MB in 3 ms
  EXPECT_DOUBLE_EQ(row.number("busbw_GBps"), 0.0);  // one rank moves nothing
  std::vector<std::string> keys;
  for (const auto& field : row.fields) keys.push_back(field.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"hidden", "chunk_comm_ms_p50", "algbw_GBps", "busbw_GBps", "wrong"}));
  // Not the comm-only row: no bandwidth; no check made: no count.
  const auto seq = ob::mode_row(base, ob::ModeSamples{ob::Mode::kSeq, {5.0}, MPI_COMM_NULL, 3e6});
  EXPECT_FALSE(seq.has("algbw_GBps") || seq.has("wrong"));
  EXPECT_DOUBLE_EQ(seq.time_ms.p50, 5.0);
}

TEST(CheckLog, KeepsTheFirstFailure) {
  ob::CheckLog log;
  EXPECT_TRUE(log.ok());
  log.mode_checks(ob::Mode::kSeq, true, 0, "");
  EXPECT_TRUE(log.ok());
  log.mode_checks(ob::Mode::kComm, true, 3, "index 7");
  log.mode_checks(ob::Mode::kOverlap, false, 0, "");
  EXPECT_EQ(log.first(), "comm: 3 elements of the all-reduced pattern are wrong (index 7)");
}

TEST(CsvSchema, TheColumnsAreTheSchemaFilesAndAMissingListIsNamed) {
  EXPECT_EQ(ob::kSummaryColumns, ob::csv_schema_columns("summary", "leading"));
  EXPECT_EQ(ob::kSummaryConfigColumns, ob::csv_schema_columns("summary", "config"));
  EXPECT_EQ(ob::kTimelineColumns, ob::csv_schema_columns("timeline", "columns"));
  EXPECT_EQ(ob::kSummaryColumns.front(), "system");
  try {
    ob::csv_schema_columns("summary", "nothing");
    FAIL() << "no throw";
  } catch (const std::logic_error& error) {
    EXPECT_STREQ(error.what(), "overlap_bench/core/schema.json has no 'summary.nothing'");
  }
}
