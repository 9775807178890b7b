#include "compiler/auto_parallel/gathers_ahead.h"

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

// ZeRO 1 and 2's shard gathers: 10 s in 5 calls. Ahead, a 3 s forward leaves 7 s of them;
// a 20 s forward all but one call's share, 2 s. Not ahead: whole.
TEST(GathersAheadTest, ShardGathersBeyondTheForwardAndAtLeastOneCall) {
  GathersAhead gathers;
  gathers.shard_seconds = 10;
  gathers.shard_calls = 5;
  gathers.shard_ahead = true;
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 3).shard_seconds, 7);
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 20).shard_seconds, 2);
  gathers.shard_ahead = false;
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 20).shard_seconds, 10);
}

// ZeRO-3's forward gathers have no floor: 5 s behind a 10 s forward are all hidden.
TEST(GathersAheadTest, ZeroThreesForwardGathersHideWhole) {
  GathersAhead gathers;
  gathers.zero3_forward_seconds = 5;
  gathers.zero3_forward_ahead = true;
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 3).zero3_forward_seconds, 2);
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 10).zero3_forward_seconds, 0);
  gathers.zero3_forward_ahead = false;
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 10).zero3_forward_seconds, 5);
}

// tp's gathers hide behind what ZeRO's left of the forward: an 8 s forward hides 3 of the
// shard gathers' 4 s (one of 4 calls exposed), and of tp's 6 s in 3 calls the remaining
// 5 s hide 4 (one call's share, 2 s, stays). Alone, the forward would have hidden all of
// tp's but its one call.
TEST(GathersAheadTest, TpGathersHideBehindWhatZerosLeft) {
  GathersAhead gathers;
  gathers.shard_seconds = 4;
  gathers.shard_calls = 4;
  gathers.shard_ahead = true;
  gathers.tp_weight_seconds = 6;
  gathers.tp_weight_calls = 3;
  gathers.tp_weight_ahead = true;
  ExposedGathers exposed = ExposeGathersAhead(gathers, 8);
  EXPECT_DOUBLE_EQ(exposed.shard_seconds, 1);
  EXPECT_DOUBLE_EQ(exposed.tp_weight_seconds, 2);
  exposed = ExposeGathersAhead(gathers, 6);
  EXPECT_DOUBLE_EQ(exposed.shard_seconds, 1);
  EXPECT_DOUBLE_EQ(exposed.tp_weight_seconds, 3);  // 3 s of forward left: 6 - 3
  gathers.shard_seconds = 0;
  EXPECT_DOUBLE_EQ(ExposeGathersAhead(gathers, 6).tp_weight_seconds, 2);
}

}  // namespace
}  // namespace oneflow::auto_parallel
