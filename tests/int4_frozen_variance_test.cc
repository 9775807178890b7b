// Error feedback under AdamW needs a linear update: 1-bit Adam's frozen variance
// (AdamWOptimizer.variance_frozen_from, GptConfig::adamw_freeze_variance_from, which the
// optimizer pass puts on every adamw op; oneflow_core/ops/optimizer.cc; docs/sbp_and_boxing.md,
// "Error feedback under a frozen variance"). The gpt of bench/compression:error_feedback_bench
// (AdamW lr 1e-2, 2 nodes x 2 devices, dp=2 x tp=2, seed 1, in one process), int4 G=32
// on the gradients' steps only after a dense warm-up of 10 iterations, error feedback on:
//   - with the variance frozen at the warm-up's end (Adam's step then linear in the
//     gradient), its final loss is the same optimizer's dense final loss within kBar;
//   - without error feedback, or with the variance adapting (plain AdamW against plain
//     AdamW dense), the same int4 steps end further than kBar from their dense run, so
//     the test fails if either half of the mechanism is removed;
//   - a run resumed after the freeze, its residuals from the checkpoint, gives the
//     uninterrupted run's losses (the freeze adds no state: v is the optimizer's own).
// Freezing changes the optimizer itself (its dense run ends far from AdamW's on this
// model), so every gap here is to the dense run of the same optimizer.
#include <cmath>
#include <cstdio>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "plan/plan_checksum.h"
#include "tests/bucket_resume.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

constexpr int64_t kIterations = 60;
constexpr int64_t kTail = 20;
constexpr int64_t kWarmUp = 10;
// The gap both halves together must stay within, and the gap each half alone exceeds.
constexpr double kBar = 0.001;

struct Variant {
  bool int4_gradients = false;
  bool error_feedback = false;
  bool frozen_variance = false;
};

// `config` compiled for `layout`, the variance frozen at the warm-up's end through the
// optimizer option when the variant says so.
proto::Plan CompileVariant(examples::GptConfig config, const examples::ParallelLayout& layout,
                           const Variant& variant) {
  config.adamw_freeze_variance_from = variant.frozen_variance ? kWarmUp : 0;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return proto::Plan();
  CompileOptions options;
  options.cluster = layout.cluster();
  options.bucket_mb = 0;  // every gradient its own step, in every variant (the same sums)
  if (variant.int4_gradients) {
    options.compression.mode = CompressionMode::kForced;
    options.compression.forced = CompressionKind::kInt4;
    options.compression_warmup_iterations = kWarmUp;
    // Marks the gradients' compressed steps; every other compressed step runs dense below.
    options.error_feedback = true;
  }
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return proto::Plan();
  int gradient_steps = 0;
  for (proto::BoxingDef& boxing : *plan->mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
      if (!step.compression().error_feedback()) {
        step.clear_compression();
        continue;
      }
      ++gradient_steps;
      if (!variant.error_feedback) step.mutable_compression()->clear_error_feedback();
    }
  }
  if (variant.int4_gradients) EXPECT_GE(gradient_steps, 8);
  int adamw_ops = 0;
  for (const proto::OpDef& op : plan->job().ops()) {
    if (op.type() != "adamw_update" && op.type() != "adamw_step") continue;
    ++adamw_ops;
    const auto frozen_from = op.attrs().find("variance_frozen_from");
    EXPECT_EQ(frozen_from == op.attrs().end() ? 0 : frozen_from->second.i(), variant.frozen_variance ? kWarmUp : 0)
        << op.name();
  }
  EXPECT_GE(adamw_ops, 8);
  EXPECT_TRUE(SealPlan(&*plan).ok());
  return *plan;
}

double FinalLoss(const proto::Plan& plan) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return NAN;
  double sum = 0;
  for (int64_t i = kIterations - kTail; i < kIterations; ++i) sum += result->iterations[i].loss;
  return sum / kTail;
}

TEST(Int4FrozenVarianceTest, ErrorFeedbackFollowsDenseOnlyWithTheVarianceFrozen) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  examples::GptConfig config = testing::AdamWCodecTestGpt();
  config.seed = 1;
  const double dense = FinalLoss(CompileVariant(config, layout, {false, false, false}));
  const double frozen_dense = FinalLoss(CompileVariant(config, layout, {false, false, true}));
  const double both = FinalLoss(CompileVariant(config, layout, {true, true, true})) / frozen_dense - 1;
  const double frozen_only = FinalLoss(CompileVariant(config, layout, {true, false, true})) / frozen_dense - 1;
  const double feedback_only = FinalLoss(CompileVariant(config, layout, {true, true, false})) / dense - 1;
  printf("final-loss gaps over %lld iterations: frozen variance + error feedback %+.4f%%, frozen variance "
         "alone %+.4f%%, error feedback alone %+.4f%%; dense %.6f, dense with the variance frozen %.6f\n",
         static_cast<long long>(kIterations), 100 * both, 100 * frozen_only, 100 * feedback_only, dense,
         frozen_dense);
  EXPECT_LT(std::abs(both), kBar);
  EXPECT_GT(std::abs(frozen_only), kBar);
  EXPECT_GT(std::abs(feedback_only), kBar);
}

TEST(Int4FrozenVarianceTest, AResumeAfterTheFreezeGivesTheUninterruptedLosses) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  examples::GptConfig config = testing::AdamWCodecTestGpt();
  config.seed = 1;
  const proto::Plan plan = CompileVariant(config, layout, {true, true, true});
  // The same plan both ways: trained 20 iterations, and resumed at 15 (after the freeze at
  // 10) from the checkpoint with its residuals, the losses within 1e-4.
  testing::ExpectBucketedTrainsAndResumesLikeUnbucketed(plan, plan, 20, 15, "int4_frozen_variance");
}

}  // namespace
}  // namespace oneflow
