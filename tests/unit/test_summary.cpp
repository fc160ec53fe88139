#include <gtest/gtest.h>

#include "common/summary.hpp"

TEST(Summary, LeadingColumnsThenFieldsInFirstSeenOrder) {
  ob::SummaryRow seq;
  seq.mode = "seq";
  seq.ranks = 2;
  seq.chunks = 5;
  seq.iters = 10;
  seq.time_ms = ob::summarize({150, 152});
  seq.set("hidden", 512).set("workload", "synthetic");
  ob::SummaryRow ovl = seq;
  ovl.mode = "overlap";
  ovl.time_ms = ob::summarize({110});
  ob::set_overlap_metrics(ovl, 150, 100, 50);
  const auto table = ob::summary_csv("phase2", {seq, ovl});
  const auto& h = table.header();
  ASSERT_GE(h.size(), 10u);
  const std::vector<std::string> leading = {"system", "phase", "mode", "ranks", "chunks", "iters",
                                            "time_ms_p50", "time_ms_p95", "time_ms_min", "time_ms_max"};
  EXPECT_TRUE(std::equal(leading.begin(), leading.end(), h.begin()));
  EXPECT_EQ(h[12], "hidden");
  EXPECT_EQ(h[13], "workload");
  EXPECT_EQ(h[14], "speedup");
  const auto& r0 = table.rows()[0];
  EXPECT_EQ(r0[0], "overlap-bench");
  EXPECT_EQ(r0[1], "phase2");
  EXPECT_EQ(r0[2], "seq");
  EXPECT_EQ(r0[6], "151");
  EXPECT_EQ(r0[14], "");  // no speedup on the sequential row
  const auto& r1 = table.rows()[1];
  EXPECT_EQ(r1[14], ob::format_number(150.0 / 110.0));
  EXPECT_EQ(ovl.get("overlap_efficiency"), "0.8");  // (100 + 50 - 110) / 50
  EXPECT_EQ(ovl.get("overlap_pct"), "80");
}

TEST(Summary, SetReplacesAndFormats) {
  ob::SummaryRow row;
  row.set("tf32", true).set("x", 1.5).set("x", 2.5).set("n", std::size_t{3});
  EXPECT_EQ(row.get("tf32"), "1");
  EXPECT_EQ(row.get("x"), "2.5");
  EXPECT_EQ(row.get("n"), "3");
  EXPECT_EQ(row.fields.size(), 3u);
  EXPECT_EQ(row.get("absent"), "");
}

TEST(Summary, DerivedRowCarriesOneValue) {
  ob::SummaryRow like;
  like.mode = "seq";
  like.set("hidden", 64);
  const auto ideal = ob::derived_row("ideal", 42.0, like);
  EXPECT_EQ(ideal.mode, "ideal");
  EXPECT_DOUBLE_EQ(ideal.time_ms.p50, 42.0);
  EXPECT_DOUBLE_EQ(ideal.time_ms.max, 42.0);
  EXPECT_EQ(ideal.get("hidden"), "64");
}
