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

TEST(PredictionStatisticsTest, ALayoutsStepIsTheMedianOrTheLeastOfItsRounds) {
  EXPECT_THAT(OfRounds({12, 10, 30}, RoundStatistic::kMedian), DoubleEq(12));
  EXPECT_THAT(OfRounds({12, 10, 30}, RoundStatistic::kLeast), DoubleEq(10));
  EXPECT_THAT(OfRounds({}, RoundStatistic::kMedian), DoubleEq(0));
}

TEST(PredictionStatisticsTest, RepeatabilityRanksEvenRoundsAgainstOddOnes) {
  // Rounds 0, 2, 4 against 1, 3. a: {10, 11, 30} | {20, 12}; b: {14, 15, 16} | {13, 15};
  // c: {18, 17, 19} | {16, 40}.
  const std::vector<std::vector<double>> rounds = {{10, 20, 11, 12, 30}, {14, 13, 15, 15, 16}, {18, 16, 17, 40, 19}};
  // Medians: even 11, 15, 18 (ranks 1 2 3) against odd 16, 14, 28 (2 1 3): 1 - 6 * 2 / (3 * 8) = 0.5.
  EXPECT_THAT(RepeatabilitySpearman(rounds, RoundStatistic::kMedian), DoubleEq(0.5));
  // Least: even 10, 14, 17 (1 2 3) against odd 12, 13, 16 (1 2 3): 1.
  EXPECT_THAT(RepeatabilitySpearman(rounds, RoundStatistic::kLeast), DoubleEq(1));
  // One round of a layout has no halves; one layout ranks nothing.
  EXPECT_THAT(RepeatabilitySpearman({{10, 20}, {30}}, RoundStatistic::kMedian), DoubleEq(0));
  EXPECT_THAT(RepeatabilitySpearman({{10, 20}}, RoundStatistic::kMedian), DoubleEq(0));
}

}  // namespace
}  // namespace oneflow::prediction
