// Forced int4 trains like dense because of its groups of 32 (sbp/compression_policy.h,
// CompressionPolicy::int4_group_size; docs/sbp_and_boxing.md, "int4 that trains like
// dense"): the gpt of tests/compression_test.cc (AdamW, 200 iterations, 2 nodes x 2
// devices, dp=2 x tp=2, every eligible step int4, in one process) trained dense, with
// forced int4 as it is (groups of 32) and with the groups of 128 forced int4 had before,
// in the same test. The groups of 32 stay within the bars below and the groups of 128
// do not, so the test fails if forced int4 goes back to 128 (or the group size stops
// reaching the codec; checked by making the step ignore the plan's group size: both runs
// then give +7.4%); the runs are deterministic. The plan's bytes of the int4 steps grow
// with the smaller groups as they should (the cost model counts the same bytes).
#include <cmath>
#include <cstdio>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/bucket_resume.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

constexpr int64_t kIterations = 200;
constexpr int64_t kTail = 20;

struct Losses {
  double mean = 0;  // over the run (the area under the curve)
  double tail = 0;  // over the last kTail iterations: the final loss
  // Planned bytes per device of the int4 steps, and what they weigh dense.
  int64_t int4_bytes = 0;
  int64_t int4_dense_bytes = 0;
};

Losses Train(const proto::Job& job, const examples::ParallelLayout& layout, CompressionMode mode,
             int64_t int4_group_size) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.compression.mode = mode;
  options.compression.forced = CompressionKind::kInt4;
  options.compression.int4_group_size = int4_group_size;
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  Losses losses;
  if (mode == CompressionMode::kForced) {
    // The group size reached the plan, so it reaches the codec.
    int int4_steps = 0;
    for (const proto::BoxingDef& boxing : plan->boxings()) {
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        if (step.compression().kind() != proto::Compression::INT4) continue;
        ++int4_steps;
        EXPECT_EQ(step.compression().block_size(), int4_group_size) << boxing.tensor();
        losses.int4_bytes += step.bytes_per_device();
        losses.int4_dense_bytes += step.dense_bytes_per_device();
      }
    }
    EXPECT_GE(int4_steps, 8);
  }
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || static_cast<int64_t>(result->iterations.size()) != kIterations) return losses;
  for (int64_t i = 0; i < kIterations; ++i) {
    const double loss = result->iterations[i].loss;
    EXPECT_TRUE(std::isfinite(loss)) << "iteration " << i;
    losses.mean += loss / kIterations;
    if (i >= kIterations - kTail) losses.tail += loss / kTail;
  }
  return losses;
}

// Measured (deterministic; bench/compression:error_feedback_bench seed 1 is this model):
// groups of 128: final loss +7.4%, mean loss +2.49% over dense; groups of 32: +1.9% and
// +1.09%. The bars sit between the two: groups of 32 must be below 3% and 1.6%, groups
// of 128 above 5% and 2%. Over seeds 1-4 of the bench the mean-loss gap of groups of 32
// is -0.2% (within 0.5%), of groups of 128 +1.45%; the final-loss gap +1.0% vs +5.5%.
TEST(Int4TrainingTest, GroupsOf32FollowDenseWhereGroupsOf128DoNot) {
  examples::ParallelFlags flags;
  flags.nodes = 2;
  flags.devices_per_node = 2;
  flags.dp = 2;
  flags.tp = 2;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::GptConfig config = testing::CodecTestGpt();
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  const proto::Job job = *examples::BuildGpt(config, layout);
  const Losses dense = Train(job, layout, CompressionMode::kOff, 32);
  ASSERT_GT(dense.mean, 0);
  // The default is what forced int4 does.
  ASSERT_EQ(CompressionPolicy().int4_group_size, 32);
  const Losses now = Train(job, layout, CompressionMode::kForced, CompressionPolicy().int4_group_size);
  const Losses before = Train(job, layout, CompressionMode::kForced, 128);
  const double now_final = now.tail / dense.tail - 1, now_mean = now.mean / dense.mean - 1;
  const double before_final = before.tail / dense.tail - 1, before_mean = before.mean / dense.mean - 1;
  printf("gpt 2x2, forced int4, %lld iterations: groups of 32: final loss %+.3f%%, mean loss %+.3f%%; groups of "
         "128: final %+.3f%%, mean %+.3f%% (dense final %.6f, mean %.5f)\n",
         static_cast<long long>(kIterations), 100 * now_final, 100 * now_mean, 100 * before_final,
         100 * before_mean, dense.tail, dense.mean);
  EXPECT_LT(std::abs(now_final), 0.03);
  EXPECT_LT(std::abs(now_mean), 0.016);
  EXPECT_GT(before_final, 0.05);
  EXPECT_GT(before_mean, 0.02);
  // The price, as the cost model and the plan count it: 0.625 instead of 0.53 bytes per
  // element (a 4-byte scale per 32 values instead of per 128), on the same steps.
  ASSERT_EQ(now.int4_dense_bytes, before.int4_dense_bytes);
  const double now_ratio = static_cast<double>(now.int4_bytes) / now.int4_dense_bytes;
  const double before_ratio = static_cast<double>(before.int4_bytes) / before.int4_dense_bytes;
  printf("planned int4 bytes / dense bytes: groups of 32 %.4f, groups of 128 %.4f\n", now_ratio, before_ratio);
  EXPECT_NEAR(now_ratio, 0.625 / 4, 0.01);
  EXPECT_NEAR(before_ratio, 0.53125 / 4, 0.01);
}

// The gpt of GroupsOf32FollowDenseWhereGroupsOf128DoNot (AdamW lr 1e-2, 5 warm-up steps).
proto::Job AdamWGpt(const examples::ParallelLayout& layout) {
  examples::GptConfig config = testing::CodecTestGpt();
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return *examples::BuildGpt(config, layout);
}

// A dense warm-up stage (CompileOptions::compression_warmup_iterations, DeepSpeed 1-bit
// Adam's; docs/sbp_and_boxing.md, "int4 that trains like dense"): with the first 50 of 200
// iterations dense, int4 G=128 hadamard gradient reductions across nodes end +0.02% +- 0.01
// above dense's final loss under AdamW at this learning rate and +0.05% at 3e-3 (seeds
// 1-8; after 20, +0.11% here but +0.86% at 3e-3; without a warm-up 0.75-2.7%), so `auto`
// on slow links now picks them for this AdamW gpt, where without the warm-up its accuracy
// rule sends int8. Compiled as error_feedback_bench's auto modes are: every compressible
// step pays at 1 MB/s, one call per gradient (buckets off).
CompileOptions SlowLinksAuto(const examples::ParallelLayout& layout, int64_t warmup) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.cluster.set_intra_node_bandwidth(1e6);
  options.cluster.set_inter_node_bandwidth(1e6);
  options.compression.mode = CompressionMode::kAuto;
  options.compression_warmup_iterations = warmup;
  options.bucket_mb = 0;
  return options;
}

// The int4 steps of gradients (an AdamW update consumes the tensor; on this layout the dp
// all-reduce across the 2 nodes, one member per node, so one level), and whether every
// compressed step carries `warmup`.
int Int4GradientSteps(const proto::Plan& plan, int64_t warmup) {
  int steps = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::NONE) continue;
      EXPECT_EQ(step.compression().dense_warmup_iterations(), warmup) << boxing.tensor();
      if ((step.compression().kind() == proto::Compression::INT4 ||
           step.compression().cross_node_kind() == proto::Compression::INT4) &&
          boxing.consumer_op().find("adamw_update") != std::string::npos) {
        ++steps;
      }
    }
  }
  return steps;
}

double FinalLoss(const proto::Plan& plan) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, train);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || static_cast<int64_t>(result->iterations.size()) != kIterations) return 0;
  double tail = 0;
  for (int64_t i = kIterations - kTail; i < kIterations; ++i) tail += result->iterations[i].loss / kTail;
  return tail;
}

// Measured on this seed (1; deterministic): with the warm-up the run ends +0.22% above
// dense (auto's fp8 activations included); with the runtime made to ignore the plan's
// warm-up (compressed from the first iteration, the same codecs) +3.07%, so the test fails
// if the warm-up stops reaching the steps.
TEST(Int4TrainingTest, AfterADenseWarmUpAutoSendsInt4GradientsUnderAdamWAndTheyEndWithinHalfAPercentOfDense) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Job job = AdamWGpt(layout);
  // Without the warm-up, the accuracy rule refuses int4 for AdamW gradients.
  absl::StatusOr<proto::Plan> cold = Compile(job, SlowLinksAuto(layout, 0));
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_EQ(Int4GradientSteps(*cold, 0), 0);
  constexpr int64_t kWarmup = 50;
  absl::StatusOr<proto::Plan> warm = Compile(job, SlowLinksAuto(layout, kWarmup));
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_GE(Int4GradientSteps(*warm, kWarmup), 8);
  CompileOptions dense_options;
  dense_options.cluster = layout.cluster();
  dense_options.bucket_mb = 0;
  absl::StatusOr<proto::Plan> dense = Compile(job, dense_options);
  ASSERT_TRUE(dense.ok()) << dense.status();
  const double dense_final = FinalLoss(*dense);
  ASSERT_GT(dense_final, 0);
  const double gap = FinalLoss(*warm) / dense_final - 1;
  printf("gpt 2x2 AdamW, auto on 1 MB/s links with %lld dense warm-up iterations: final loss %+.3f%% of dense "
         "(%.6f)\n",
         static_cast<long long>(kWarmup), 100 * gap, dense_final);
  EXPECT_LT(std::abs(gap), 0.005);
}

// The warm-up keeps no state of its own: a run resumed from a checkpoint taken inside the
// warm-up (iteration 40 of 50) runs its remaining dense iterations, then the codecs, by the
// iteration it resumed at, and ends at the uninterrupted run's losses (1e-4); the same plan
// with gradient buckets (their compressed buckets run dense for the warm-up too) trains
// to the same losses bit for bit.
TEST(Int4TrainingTest, ADenseWarmUpResumesAndBucketsLikeTheUninterruptedRun) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Job job = AdamWGpt(layout);
  CompileOptions options = SlowLinksAuto(layout, 50);
  absl::StatusOr<proto::Plan> unbucketed = Compile(job, options);
  ASSERT_TRUE(unbucketed.ok()) << unbucketed.status();
  options.bucket_mb = 25;
  absl::StatusOr<proto::Plan> bucketed = Compile(job, options);
  ASSERT_TRUE(bucketed.ok()) << bucketed.status();
  bool compressed_bucket = false;
  for (const proto::GradientBucketDef& bucket : bucketed->buckets()) {
    if (bucket.compression().kind() == proto::Compression::NONE) continue;
    compressed_bucket = true;
    EXPECT_EQ(bucket.compression().dense_warmup_iterations(), 50);
  }
  EXPECT_TRUE(compressed_bucket);
  testing::ExpectBucketedTrainsAndResumesLikeUnbucketed(*unbucketed, *bucketed, 60, 40, "int4_dense_warmup");
}

TEST(Int4TrainingTest, ANegativeWarmUpIsRefusedNamingIt) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Job job = *examples::BuildGpt(testing::CodecTestGpt(), layout);
  absl::StatusOr<proto::Plan> plan = Compile(job, SlowLinksAuto(layout, -1));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("compression_warmup_iterations is -1; it must be >= 0"), std::string::npos)
      << plan.status();
}

}  // namespace
}  // namespace oneflow
