#include "compiler/auto_parallel/stage_cuts.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

using Counts = std::vector<int64_t>;

// The same segment costs on every stage.
StageCutCosts Uniform(int64_t stages, const std::vector<double>& seconds, const std::vector<double>& bytes) {
  StageCutCosts costs;
  costs.seconds.assign(stages, seconds);
  costs.bytes.assign(stages, bytes);
  return costs;
}

TEST(StageCutsTest, BalancedCountsAreParallelLayoutsStageOf) {
  EXPECT_EQ(BalancedStageBlocks(4, 2), (Counts{2, 2}));
  EXPECT_EQ(BalancedStageBlocks(5, 2), (Counts{2, 3}));
  EXPECT_EQ(BalancedStageBlocks(6, 4), (Counts{1, 2, 1, 2}));
  EXPECT_EQ(BalancedStageBlocks(3, 3), (Counts{1, 1, 1}));
}

TEST(StageCutsTest, EqualBlocksCutEvenly) {
  EXPECT_EQ(MinimizeSlowestStage(Uniform(2, {1, 1, 1, 1}, {0, 0, 0, 0})), (Counts{2, 2}));
  EXPECT_EQ(MinimizeSlowestStage(Uniform(3, {1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0})), (Counts{2, 2, 2}));
}

TEST(StageCutsTest, AHeavyOutputLayerLeavesTheLastStageFewerBlocks) {
  // Four blocks of 1 s; the last segment carries the output layer and loss (+1.5 s).
  // Balanced {2, 2}: stages of 2 and 3.5 s; {3, 1}: 3 and 2.5.
  EXPECT_EQ(MinimizeSlowestStage(Uniform(2, {1, 1, 1, 2.5}, {0, 0, 0, 0})), (Counts{3, 1}));
  // A heavy embedding on the first segment mirrors it.
  EXPECT_EQ(MinimizeSlowestStage(Uniform(2, {2.5, 1, 1, 1}, {0, 0, 0, 0})), (Counts{1, 3}));
}

TEST(StageCutsTest, TheStageCostsDependOnTheStage) {
  // Stage 1's placement makes its blocks twice as slow (a tp group across nodes):
  // {3, 1} gives 3 and 2 s; {2, 2} gives 2 and 4.
  StageCutCosts costs;
  costs.seconds = {{1, 1, 1, 1}, {2, 2, 2, 2}};
  costs.bytes = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  EXPECT_EQ(MinimizeSlowestStage(costs), (Counts{3, 1}));
}

TEST(StageCutsTest, TheMemoryLimitMovesBlocksOffTheFirstStage) {
  // 1F1B keeps two micro-batches in flight on stage 0 of 2 and one on stage 1: a block
  // adds 10 bytes there and 5 here.
  StageCutCosts costs;
  costs.seconds = {{1, 1, 1, 1}, {1, 1, 1, 1}};
  costs.bytes = {{10, 10, 10, 10}, {5, 5, 5, 5}};
  costs.memory_limit = 20;
  EXPECT_EQ(MinimizeSlowestStage(costs), (Counts{2, 2}));
  costs.memory_limit = 15;  // stage 0 holds one block; stage 1 three (15 bytes)
  EXPECT_EQ(MinimizeSlowestStage(costs), (Counts{1, 3}));
  costs.memory_limit = 14;  // nothing fits
  EXPECT_EQ(MinimizeSlowestStage(costs), std::nullopt);
}

TEST(StageCutsTest, TiesGiveTheEarlierStagesFewerBlocks) {
  // Six equal blocks on four stages: the slowest stage holds two whatever the cut.
  EXPECT_EQ(MinimizeSlowestStage(Uniform(4, {1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0})), (Counts{1, 1, 2, 2}));
}

TEST(StageCutsTest, MalformedCostsHaveNoAnswer) {
  EXPECT_EQ(MinimizeSlowestStage(Uniform(3, {1, 1}, {0, 0})), std::nullopt);  // more stages than blocks
  StageCutCosts ragged;
  ragged.seconds = {{1, 1}, {1}};
  ragged.bytes = {{0, 0}, {0, 0}};
  EXPECT_EQ(MinimizeSlowestStage(ragged), std::nullopt);
  EXPECT_EQ(MinimizeSlowestStage(StageCutCosts()), std::nullopt);
}

}  // namespace
}  // namespace oneflow::auto_parallel
