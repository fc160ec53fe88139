#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/options.hpp"
#include "common/verify.hpp"

TEST(CompareExact, CountsEveryWrongElementAndNamesTheFirst) {
  std::vector<float> expected = {1, 2, 3, 4, 5};
  std::vector<float> got = expected;
  EXPECT_EQ(ob::compare_exact(got.data(), expected.data(), got.size()).wrong, 0u);
  got[1] = 2.5f;  // deliberately corrupted
  got[4] = -5;
  const auto check = ob::compare_exact(got.data(), expected.data(), got.size());
  EXPECT_EQ(check.wrong, 2u);
  EXPECT_EQ(check.first, "index 1: got 2.5, expected 2");
}

TEST(CompareExact, NegativeZeroAndNanAreWrong) {
  const float expected[2] = {0.0f, 1.0f};
  const float got[2] = {-0.0f, NAN};
  EXPECT_EQ(ob::compare_exact(got, expected, 2).wrong, 2u);
}

TEST(CompareRelative, ErrorNormAndWorstElement) {
  const std::vector<double> ref = {3, 4};
  std::vector<float> got = {3, 4};
  EXPECT_DOUBLE_EQ(ob::compare_relative(got.data(), ref.data(), 2).rel_error, 0.0);
  got[1] = 4.5f;  // ||d|| = 0.5, ||ref|| = 5
  const auto check = ob::compare_relative(got.data(), ref.data(), 2);
  EXPECT_DOUBLE_EQ(check.rel_error, 0.1);
  EXPECT_EQ(check.worst_index, 1u);
  EXPECT_FALSE(check.passes(1e-5));
  EXPECT_TRUE(check.passes(0.2));
  EXPECT_EQ(check.describe(1e-5), "rel error 0.1 > 1e-05; worst at index 1: got 4.5, expected 4");
}

TEST(CompareRelative, NanNeverPasses) {
  const std::vector<double> ref = {1, 1};
  const std::vector<float> got = {1, NAN};
  const auto check = ob::compare_relative(got.data(), ref.data(), 2);
  EXPECT_FALSE(check.passes(1e9));
  EXPECT_EQ(check.worst_index, 1u);
}

TEST(ExactPattern, SmallIntegersNotAllZeroAndDeterministic) {
  int zeros = 0, distinct_negative = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float v = ob::exact_pattern(7, i);
    EXPECT_EQ(v, std::round(v));
    EXPECT_LE(std::fabs(v), 2.0f);
    EXPECT_EQ(v, ob::exact_pattern(7, i));
    zeros += v == 0;
    distinct_negative += v < 0;
  }
  EXPECT_LT(zeros, 200);
  EXPECT_GT(distinct_negative, 200);
  EXPECT_NE(ob::exact_pattern(7, 0) + ob::exact_pattern(7, 1) + ob::exact_pattern(7, 2),
            ob::exact_pattern(8, 0) + ob::exact_pattern(8, 1) + ob::exact_pattern(8, 2) + 100);
}

TEST(FiniteIn, RejectsNanInfinityAndOutOfRange) {
  double value = 0;
  for (const std::string bad : {"nan", "inf", "-inf", "-1", "1e9", "abc", "2x"}) {
    CLI::App app("t", "prog");
    app.add_option("--x", value)->check(ob::finite_in(0, 1e6));
    std::vector<std::string> args = {"prog", "--x", bad};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    EXPECT_EQ(ob::parse_options(app, 3, argv.data(), false), 2) << bad;
  }
}
