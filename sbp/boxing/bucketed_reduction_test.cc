// A dense gradient reduction that rides in a gradient bucket is priced as the runtime runs
// it (axis_step.cc AlgorithmBytes, sbp_search.cc): by the algorithm of the bucket's size,
// its calls' latency shared by the bucket's members; a step after the bucket (an all-gather
// of a reduce-scatter's shards) is a call of its own.
#include <string>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing.h"

namespace oneflow {
namespace {

// 3 hosts, one device each; 1e8 B/s and 100 us per round across them.
const LinkModel kLinks{/*intra_node_bandwidth=*/1e9, /*inter_node_bandwidth=*/1e8, /*intra_node_latency=*/1e-6,
                       /*inter_node_latency=*/1e-4};

BoxingPlan GradientPlan(bool in_bucket, int64_t bucket_bytes_limit) {
  const Placement hosts = *Placement::Parse("cpu{0:0, 1:0, 2:0}");
  BoxingOptions dense;
  dense.dense_in_bucket = in_bucket;
  dense.bucket_bytes_limit = bucket_bytes_limit;
  // A 96 x 96 f32 weight's gradient (36,864 B), P -> B: the bench gpt's attention
  // projections.
  absl::StatusOr<BoxingPlan> plan =
      PlanBoxing(Shape{96, 96}, DType::kF32, *NdSbp::Parse("P"), hosts, *NdSbp::Parse("B"), hosts, kLinks, dense);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : BoxingPlan();
}

std::string Kinds(const BoxingPlan& plan) {
  std::string text;
  for (const BoxingStep& step : plan.steps) text += std::string(BoxingKindName(step.kind)) + " ";
  return text;
}

// Alone, the all-reduce of 36,864 B (<= 64 KiB) runs one round, the whole input to both
// peers: 100 us + 2 x 36,864 B / 1e8 = 837.28 us; a reduce-scatter and an all-gather
// move 2/3 of it each: 2 x (100 us + 24,576 B / 1e8) = 691.52 us. The pair wins.
TEST(BucketedReductionTest, AloneASmallGradientGoesReduceScatterThenAllGather) {
  const BoxingPlan plan = GradientPlan(/*in_bucket=*/false, 0);
  EXPECT_EQ(Kinds(plan), "reduce_scatter all_gather ");
  EXPECT_NEAR(plan.seconds, 691.52e-6, 1e-12);
}

// In a bucket of up to 25 MiB the bucket's all-reduce runs two rounds (more than 64 KiB),
// its latency shared by every member: the member adds 4/3 x 36,864 B = 49,152 B to the
// wire, 491.52 us. The pair: the reduce-scatter in its bucket adds 245.76 us, its all-gather
// runs alone, 100 + 245.76 us: 591.52 us. The all-reduce wins; its price with the bucket's
// two rounds is 200 + 491.52 us, of which the 200 us are shared.
TEST(BucketedReductionTest, InABucketTheAllReduceIsPricedAsTheBucketsTwoRounds) {
  const BoxingPlan plan = GradientPlan(/*in_bucket=*/true, int64_t{25} << 20);
  EXPECT_EQ(Kinds(plan), "all_reduce ");
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_NEAR(plan.seconds, 691.52e-6, 1e-12);
  EXPECT_NEAR(plan.steps[0].bucket_shared_latency_seconds, 200e-6, 1e-12);
  EXPECT_EQ(plan.steps[0].bytes_per_device, 49152);
}

// A bucket of at most 64 KiB runs one round like the member alone, where the member adds
// 2 x 36,864 B / 1e8 = 737.28 us; the pair adds 245.76 + 345.76 = 591.52 us, and wins.
TEST(BucketedReductionTest, ABucketWithinOneRoundKeepsTheOneRoundPrice) {
  const BoxingPlan plan = GradientPlan(/*in_bucket=*/true, 64 << 10);
  EXPECT_EQ(Kinds(plan), "reduce_scatter all_gather ");
  EXPECT_NEAR(plan.seconds, 691.52e-6, 1e-12);
}

}  // namespace
}  // namespace oneflow
