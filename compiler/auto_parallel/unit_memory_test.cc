#include "compiler/auto_parallel/unit_memory.h"

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

// 400 B of parameters (200 tp-sharded), 100 B kept for the whole batch (40 tp-split, 20
// the attention core's), a 10 B input.
ProfileUnit Unit() {
  ProfileUnit unit;
  unit.parameter_bytes = 400;
  unit.tp_parameter_bytes = 200;
  unit.kept_activation_bytes = 100;
  unit.kept_tp_activation_bytes = 40;
  unit.kept_attention_core_activation_bytes = 20;
  unit.input_bytes = 10;
  return unit;
}

proto::AutoParallelLayout Layout(int64_t dp, int64_t tp, int64_t micro_batches, proto::RecomputeMode recompute,
                                 int zero = 0) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(tp);
  layout.set_pp(1);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  layout.set_recompute(recompute);
  return layout;
}

TEST(UnitMemoryTest, TheHintsSplitParametersAndKeptActivationsOverTp) {
  const ProfileUnit unit = Unit();
  const ModelProfile profile;
  // dp = 2: half the rows; tp = 2: the hinted halves. Parameters 200 + 100, kept
  // (60 + 20) / 2.
  const UnitMemory none = UnitMemoryOf(unit, unit, profile, Layout(2, 2, 1, proto::RECOMPUTE_NONE), true);
  EXPECT_DOUBLE_EQ(none.parameter_bytes, 300);
  EXPECT_DOUBLE_EQ(none.gradient_bytes, 300);
  EXPECT_DOUBLE_EQ(none.gathered_bytes, 0);
  EXPECT_DOUBLE_EQ(none.kept_bytes, 40);
  EXPECT_DOUBLE_EQ(none.recomputed_bytes, 0);
  // Selective recomputation drops the core's 20 / 2; full keeps the input and re-makes the rest.
  EXPECT_DOUBLE_EQ(UnitMemoryOf(unit, unit, profile, Layout(2, 2, 1, proto::RECOMPUTE_SELECTIVE), true).kept_bytes,
                   35);
  const UnitMemory full = UnitMemoryOf(unit, unit, profile, Layout(2, 2, 1, proto::RECOMPUTE_FULL), true);
  EXPECT_DOUBLE_EQ(full.kept_bytes, 5);
  EXPECT_DOUBLE_EQ(full.recomputed_bytes, 40);
  // Outside a block recomputation changes nothing.
  EXPECT_DOUBLE_EQ(UnitMemoryOf(unit, unit, profile, Layout(2, 2, 1, proto::RECOMPUTE_FULL), false).kept_bytes, 40);
}

TEST(UnitMemoryTest, AProbeOfTheLayoutsTpKeepsItsOwnBytesAndGathers) {
  const ProfileUnit unit = Unit();
  ModelProfile probe;
  probe.planned_kept_tp = 2;
  probe.planned_kept_row_parts = 4;  // its devices computed a quarter of the batch
  probe.tp_boxings_counted = true;
  ProfileUnit probed = unit;
  probed.planned_kept_bytes = 30;
  probed.planned_kept_attention_core_bytes = 8;
  TpBoxing gather;  // a sharded weight gathered whole for its readers
  gather.kind = proto::STEP_ALL_GATHER;
  gather.bytes = 200;
  TpBoxing scatter;  // its partial-sum gradient reduce-scattered at the update
  scatter.kind = proto::STEP_REDUCE_SCATTER;
  scatter.bytes = 200;
  scatter.per_iteration = true;
  TpBoxing activation;  // an activation's: neither
  activation.kind = proto::STEP_ALL_GATHER;
  activation.bytes = 64;
  activation.scales_with_rows = true;
  probed.tp_boxings = {gather, scatter, activation};
  // dp = 2 with 2 micro-batches: a quarter of the batch per micro-batch, as the probe's.
  const UnitMemory memory = UnitMemoryOf(unit, probed, probe, Layout(2, 2, 2, proto::RECOMPUTE_NONE), true);
  EXPECT_DOUBLE_EQ(memory.kept_bytes, 30);
  EXPECT_DOUBLE_EQ(memory.gathered_bytes, 200);
  EXPECT_DOUBLE_EQ(memory.gradient_bytes, 300 + 100);
  EXPECT_DOUBLE_EQ(UnitMemoryOf(unit, probed, probe, Layout(2, 2, 2, proto::RECOMPUTE_SELECTIVE), true).kept_bytes,
                   22);
  // Another tp degree: the hints' kept bytes, and no gathers without tp.
  const UnitMemory one = UnitMemoryOf(unit, probed, probe, Layout(4, 1, 1, proto::RECOMPUTE_NONE), true);
  EXPECT_DOUBLE_EQ(one.kept_bytes, 25);
  EXPECT_DOUBLE_EQ(one.gathered_bytes, 0);
  EXPECT_DOUBLE_EQ(one.gradient_bytes, 400);
}

TEST(UnitMemoryTest, OnlyDataParallelAllReduceBucketsOfOneMicroBatchAreHeldWhole) {
  EXPECT_DOUBLE_EQ(GradientBucketBytes(Layout(2, 1, 1, proto::RECOMPUTE_NONE), 25), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(GradientBucketBytes(Layout(2, 1, 1, proto::RECOMPUTE_NONE, 1), 25), 25.0 * 1024 * 1024);
  EXPECT_EQ(GradientBucketBytes(Layout(1, 1, 1, proto::RECOMPUTE_NONE), 25), 0);     // no dp
  EXPECT_EQ(GradientBucketBytes(Layout(2, 2, 1, proto::RECOMPUTE_NONE), 25), 0);     // tp's reductions first
  EXPECT_EQ(GradientBucketBytes(Layout(2, 1, 2, proto::RECOMPUTE_NONE), 25), 0);     // accumulated
  EXPECT_EQ(GradientBucketBytes(Layout(2, 1, 1, proto::RECOMPUTE_NONE, 2), 25), 0);  // reduce-scatter
}

}  // namespace
}  // namespace oneflow::auto_parallel
