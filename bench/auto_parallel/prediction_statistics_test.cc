// The two figures issue 26's prediction goals are stated in, on hand-worked values.
#include "bench/auto_parallel/prediction_statistics.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::prediction {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

TEST(PredictionStatisticsTest, MedianOfOddAndEvenCountsAndNone) {
  EXPECT_THAT(Median({0.3, 0.1, 0.2}), DoubleEq(0.2));
  EXPECT_THAT(Median({0.4, 0.1, 0.3, 0.2}), DoubleEq(0.25));
  EXPECT_THAT(Median({}), DoubleEq(0));
}

TEST(PredictionStatisticsTest, TiesShareTheirMeanRank) {
  EXPECT_THAT(Ranks({30, 10, 20, 10}), ElementsAre(4, 1.5, 3, 1.5));
}

TEST(PredictionStatisticsTest, SpearmanComparesOrdersNotSizes) {
  // Any increasing map of the measured steps ranks them alike.
  EXPECT_THAT(Spearman({1, 2, 3, 4}, {10, 200, 3000, 40000}), DoubleEq(1));
  EXPECT_THAT(Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), DoubleEq(-1));
  // One adjacent swap of 4: 1 - 6 * 2 / (4 * 15) = 0.8.
  EXPECT_THAT(Spearman({1, 2, 3, 4}, {1, 3, 2, 4}), DoubleEq(0.8));
  // A constant prediction ranks nothing.
  EXPECT_THAT(Spearman({5, 5, 5}, {1, 2, 3}), DoubleEq(0));
}

}  // namespace
}  // namespace oneflow::prediction
