#include "compiler/auto_parallel/peak_bytes.h"

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

proto::AutoParallelLayout Layout(int64_t dp, int64_t micro_batches, int zero) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(1);
  layout.set_pp(1);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  return layout;
}

// 400 B of parameters, Adam's 2 state copies, 100 B kept per micro-batch, 2 slots.
PeakTerms Terms() {
  PeakTerms terms;
  terms.parameter_bytes = 400;
  terms.kept_bytes = 100;
  terms.register_count = 2;
  terms.optimizer_state_copies = 2;
  return terms;
}

TEST(PeakBytesTest, OneMicroBatchHoldsParametersGradientsStateAndTheSlotsOfActivations) {
  // 400 + 400 + 800 + 100 x 2.
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 0), Terms()), 1800);
  // ZeRO-3 over 4: shards of 100 each + the largest unit's gathered 50.
  PeakTerms gathered = Terms();
  gathered.largest_gathered_bytes = 50;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 3), gathered), 150 + 100 + 200 + 200);
}

TEST(PeakBytesTest, FullRecomputationHoldsTheLargestUnitsReMadeActivations) {
  PeakTerms terms = Terms();
  terms.largest_recomputed_bytes = 30;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 0), terms), 1600 + (100 + 30) * 2);
}

TEST(PeakBytesTest, MicroBatchesAddTheirPerIterationValuesOnce) {
  // The accumulated gradients (400) in their all-reduce bucket.
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 2, 0), Terms()), 1800 + 400);
  // ZeRO-2: the accumulators, the reduce-scatter bucket's copy, the gathered parameters
  // and the shard's new parameters and 2 state copies (100 each).
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 2, 2), Terms()), (400 + 100 + 200 + 200) + 400 + 400 + 400 + 300);
}

}  // namespace
}  // namespace oneflow::auto_parallel
