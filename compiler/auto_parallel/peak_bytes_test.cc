#include "compiler/auto_parallel/peak_bytes.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

proto::AutoParallelLayout Layout(int64_t dp, int64_t micro_batches, int zero, int64_t pp = 1) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(1);
  layout.set_pp(pp);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  return layout;
}

// 400 B of parameters and as many of gradients, Adam's 2 state copies, 100 B kept per
// micro-batch, 2 slots.
PeakTerms Terms() {
  PeakTerms terms;
  terms.parameter_bytes = 400;
  terms.gradient_bytes = 400;
  terms.kept_bytes = 100;
  terms.register_count = 2;
  terms.optimizer_state_copies = 2;
  return terms;
}

TEST(PeakBytesTest, OneMicroBatchHoldsParametersStateAndTheSlotsOfActivationsAndGradients) {
  // 400 + 800 persistent, 2 slots of 100 kept + 400 of gradients (the bound without a
  // backward peak given).
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 0), Terms()), 1200 + 2 * 500);
  // The backward's peak as given: 2 slots of 450.
  PeakTerms held = Terms();
  held.backward_held_bytes = 450;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 0), held), 1200 + 2 * 450);
}

TEST(PeakBytesTest, ZeroWithOneMicroBatchHoldsTheUpdatesValuesAfterBackward) {
  // ZeRO-1 over 4: the reduced gradients and the whole parameters gathered from the
  // shards (400 + 400) beat the backward's 500; state 2 x 100.
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 1), Terms()), 400 + 200 + 2 * 800);
  // ZeRO-2: the gradients, the bucket packing them and the shard (400 + 400 + 100).
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 2), Terms()), 400 + 200 + 2 * 900);
  // ZeRO-3: shards of 100; the gradients and their bucket (800) beat the backward's 500
  // with the largest unit's gathered 50.
  PeakTerms gathered = Terms();
  gathered.largest_gathered_bytes = 50;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 3), gathered), 100 + 200 + 2 * 800);
  // Small gradients: the backward's peak with the gathered unit (700 + 50).
  gathered.backward_held_bytes = 700;
  gathered.gradient_bytes = 100;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 3), gathered), 100 + 200 + 2 * 750);
  // Without data parallelism there is nothing to shard or scatter: the backward's peak.
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(1, 1, 2), Terms()), 400 + 800 + 2 * 500);
}

TEST(PeakBytesTest, FullRecomputationHoldsTheLargestUnitsReMadeActivations) {
  PeakTerms terms = Terms();
  terms.largest_recomputed_bytes = 30;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 1, 0), terms), 1200 + 2 * (500 + 30));
}

TEST(PeakBytesTest, MicroBatchesAddTheirPerIterationValuesOnce) {
  // The accumulated gradients (400) in their all-reduce bucket.
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 2, 0), Terms()), 1200 + 2 * 500 + 400);
  // ZeRO-2: the accumulators, the reduce-scatter bucket's copy, the gathered parameters
  // and the shard's new parameters and 2 state copies (100 each).
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(4, 2, 2), Terms()), (400 + 200) + 2 * 500 + 400 + 400 + 400 + 300);
}

TEST(PeakBytesTest, APipelineWithMicroBatchesHoldsASlotPerMicroBatchInFlight) {
  EXPECT_EQ(ArenaCopies(Layout(1, 4, 0), 0, 2), 2);
  EXPECT_EQ(ArenaCopies(Layout(1, 1, 0, 4), 0, 2), 2);
  EXPECT_EQ(ArenaCopies(Layout(1, 8, 0, 4), 0, 2), 4);
  EXPECT_EQ(ArenaCopies(Layout(1, 8, 0, 4), 3, 2), 1);
  // Stage 1 of 4: 3 slots, each with the stage's receptions.
  PeakTerms terms = Terms();
  terms.stage = 1;
  terms.received_bytes = 10;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(1, 8, 0, 4), terms), 1200 + 3 * (500 + 10) + 400);
}

TEST(PeakBytesTest, TensorParallelGathersLiveInTheSlotOrOncePerIteration) {
  PeakTerms terms = Terms();
  terms.gathered_bytes = 60;
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(2, 1, 0), terms), 1200 + 2 * (500 + 60));
  EXPECT_DOUBLE_EQ(DevicePeakBytes(Layout(2, 2, 0), terms), 1200 + 2 * 500 + 400 + 60);
}

TEST(PeakBytesTest, BackwardHoldsTheActivationsLeftAndTheGradientsMade) {
  // Backward runs the units last to first: 60 kept before it, 60 + 4 while the last
  // runs, 30 + 8, 10 + 12.
  const std::vector<HeldUnit> activations_first = {{10, 4}, {20, 4}, {30, 4}};
  EXPECT_DOUBLE_EQ(BackwardHeldBytes(activations_first, 0), 64);
  // A bucket of 100 holds every gradient from the first on.
  EXPECT_DOUBLE_EQ(BackwardHeldBytes(activations_first, 100), 72);
  // Gradients larger than the activations peak at the end: 1 + 30.
  const std::vector<HeldUnit> gradients_first = {{1, 10}, {1, 10}, {1, 10}};
  EXPECT_DOUBLE_EQ(BackwardHeldBytes(gradients_first, 0), 31);
  // Buckets of 15: 15 held after the first unit, 30 after the second (2 + 30).
  EXPECT_DOUBLE_EQ(BackwardHeldBytes(gradients_first, 15), 32);
}

}  // namespace
}  // namespace oneflow::auto_parallel
