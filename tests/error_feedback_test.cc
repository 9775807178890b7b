// Error feedback end to end (kernels/compression/compressed_collectives.h, "Error
// feedback"; docs/sbp_and_boxing.md): with CompileOptions.error_feedback the compiler
// marks exactly the compressed steps of gradients, reductions and the all-gathers that end
// a gradient's chain (and auto's int4 steps are all among
// them); int4 gradient reductions of the mlp (SGD momentum) over 2 nodes x 2 devices
// follow the dense losses closer with it than without; the gpt's under SGD end at dense
// with it, and with int4 forward activations where dense gradient reductions do; a
// checkpoint carries every device's residuals, so a resumed run's losses are the
// uninterrupted run's; a resume on another layout starts the residuals from zero and
// says so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "plan/plan_checksum.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

proto::Plan Compile(const proto::Job& job, const examples::ParallelLayout& layout, CompressionMode mode,
                    bool error_feedback = true) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.compression.mode = mode;
  options.compression.forced = CompressionKind::kInt4;
  options.error_feedback = error_feedback;
  absl::StatusOr<proto::Plan> plan = oneflow::Compile(job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

proto::Plan CompileGpt(const examples::ParallelLayout& layout, CompressionMode mode, bool error_feedback = true) {
  return Compile(*examples::BuildGpt(testing::ResumeTestGpt(), layout), layout, mode, error_feedback);
}

// The plan with error feedback turned off on every step: what the runtime did before it.
proto::Plan WithoutErrorFeedback(proto::Plan plan) {
  for (proto::BoxingDef& boxing : *plan.mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) step.mutable_compression()->clear_error_feedback();
  }
  // A compressed gradient bucket shares its members' format (gradient_buckets.md).
  for (proto::GradientBucketDef& bucket : *plan.mutable_buckets()) bucket.mutable_compression()->clear_error_feedback();
  EXPECT_TRUE(SealPlan(&plan).ok());
  return plan;
}

std::vector<double> Losses(const absl::StatusOr<actors::TrainResult>& result) {
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

std::vector<double> Train(const proto::Plan& plan, int64_t iterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  return Losses(actors::TrainPlan(plan, options));
}

// Under forced compression every compressible step of the gpt compresses (activations
// and weights too); error feedback is on exactly the compressed steps of variables'
// gradients: their reductions and, since session 47, the all-gathers that end a
// gradient's chain (a layer norm's or wpe's gradient: reduce-scatter over tp, all-reduce
// over dp, all-gather over tp), where the shard owner keeps the residual.
TEST(ErrorFeedbackTest, TheCompilerMarksExactlyTheCompressedGradientSteps) {
  const proto::Plan plan = CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kForced);
  std::vector<std::string> gradients;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() == "adamw_update" || op.type() == "sgd_update") gradients.push_back(op.inputs().at("grad"));
  }
  int marked = 0, marked_gathers = 0, compressed_other = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    const bool gradient = std::find(gradients.begin(), gradients.end(), boxing.tensor()) != gradients.end();
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      const bool compressed = step.compression().kind() != proto::Compression::NONE;
      EXPECT_EQ(step.compression().error_feedback(), gradient && compressed)
          << boxing.tensor() << " " << proto::BoxingStepKind_Name(step.kind());
      marked += step.compression().error_feedback();
      marked_gathers += step.compression().error_feedback() && step.kind() == proto::STEP_ALL_GATHER;
      compressed_other += compressed && !gradient;
    }
  }
  EXPECT_GE(marked, 8);            // the gpt's weights, reduced over dp
  // The 2 blocks' 4 layer norms' and the final one's gamma and beta, and wpe.
  EXPECT_EQ(marked_gathers, 11);
  EXPECT_GE(compressed_other, 4);  // activations and weight gathers, without it
  // Off, or without CompileOptions.error_feedback: no step has error feedback.
  for (const proto::Plan& other : {CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kOff),
                                   CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kForced, false)}) {
    for (const proto::BoxingDef& boxing : other.boxings()) {
      for (const proto::BoxingStepDef& step : boxing.steps()) EXPECT_FALSE(step.compression().error_feedback());
    }
  }
}

// `auto` picks int4 for gradient reductions only, so with error feedback on every int4
// step carries it (two-level int4 across nodes under tp=4, flat int4 with Hadamard under
// dp=2 x tp=2, both on a slow link). The gpt trains with SGD here: under AdamW, int4
// gradients with error feedback are outside auto's accuracy bound (sbp/codec_accuracy.h)
// and auto would pick int8.
TEST(ErrorFeedbackTest, AutoPicksInt4OnlyWithErrorFeedback) {
  for (const int64_t tp : {2, 4}) {
    examples::ParallelFlags flags;
    flags.nodes = 2;
    flags.devices_per_node = 2;
    flags.dp = 4 / tp;
    flags.tp = tp;
    flags.inter_node_bandwidth = 1.25e8;
    const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
    proto::Job job = *examples::BuildGpt(testing::ResumeTestGpt(), layout);
    job.mutable_optimizer()->mutable_sgd()->set_momentum(0.9);
    const proto::Plan plan = Compile(job, layout, CompressionMode::kAuto);
    int int4_steps = 0;
    for (const proto::BoxingDef& boxing : plan.boxings()) {
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        const proto::Compression& compression = step.compression();
        if (compression.kind() != proto::Compression::INT4 && compression.cross_node_kind() != proto::Compression::INT4) {
          continue;
        }
        ++int4_steps;
        EXPECT_TRUE(compression.error_feedback()) << "tp=" << tp << ": " << boxing.tensor() << " "
                                                  << proto::BoxingStepKind_Name(step.kind());
      }
    }
    EXPECT_GE(int4_steps, 4) << "tp=" << tp;
  }
}

// int4 (groups of 128, rounding to nearest) on the gradient reductions of the mlp (SGD
// momentum 0.9; tests/compression_test.cc's) over 2 nodes x 2 devices, dp=2 x tp=2,
// everything else dense: over the first 60 iterations, before the runs' trajectories
// part (single batches of these small models are chaotic: any perturbation ends up
// several percent off), the losses stay closer to dense with error feedback than without.
// Measured: mean |loss - dense| 0.0006 vs 0.0011 over 10 iterations, 0.029 vs 0.043 over
// 60; over all 200 both are about 0.09, and the mean loss of the 200 iterations is +6.7%
// with it, +1.9% without. On the gpt with AdamW (lr 2e-3, the same layout) error feedback
// does worse from the start: 0.0055 vs 0.0041 over 10, mean loss +1.8% vs +0.9% (Adam
// divides each element by its own running gradient magnitude, so the residual delivered
// in bursts changes its steps: 1-bit Adam's observation); hence it is opt-in.
TEST(ErrorFeedbackTest, Int4GradientsOfTheMlpFollowDenseCloserWithErrorFeedback) {
  constexpr int64_t kIterations = 60;
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  examples::MlpConfig config;
  config.batch = 32;
  config.in_features = 16;
  config.hidden = 64;
  config.classes = 4;
  const proto::Job job = *examples::BuildMlp(config, layout);
  const std::vector<double> dense = Train(Compile(job, layout, CompressionMode::kOff), kIterations);
  ASSERT_EQ(dense.size(), static_cast<size_t>(kIterations));
  // Forced int4, kept only on the steps with error feedback: the gradient reductions.
  proto::Plan int4 = Compile(job, layout, CompressionMode::kForced);
  int gradient_steps = 0;
  for (proto::BoxingDef& boxing : *int4.mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
      if (!step.compression().error_feedback()) step.clear_compression();
      gradient_steps += step.compression().error_feedback();
    }
  }
  ASSERT_TRUE(SealPlan(&int4).ok());
  ASSERT_GE(gradient_steps, 4);
  const std::vector<double> with = Train(int4, kIterations);
  const std::vector<double> without = Train(WithoutErrorFeedback(int4), kIterations);
  ASSERT_EQ(with.size(), dense.size());
  ASSERT_EQ(without.size(), dense.size());
  double distance_with = 0, distance_without = 0;
  for (size_t i = 0; i < dense.size(); ++i) {
    ASSERT_TRUE(std::isfinite(with[i])) << "iteration " << i;
    distance_with += std::abs(with[i] - dense[i]) / dense.size();
    distance_without += std::abs(without[i] - dense[i]) / dense.size();
  }
  printf("mlp 2 nodes x 2 devices, int4 gradient reductions, mean |loss - dense| over %lld iterations: %.5f with "
         "error feedback, %.5f without (dense from %.4f to %.4f)\n",
         static_cast<long long>(kIterations), distance_with, distance_without, dense.front(), dense.back());
  // The codec ran: a dense run would match to float reassociation.
  EXPECT_GT(distance_with, 1e-5);
  EXPECT_LT(distance_with, 0.8 * distance_without);
}

// The gpt of bench/compression:error_feedback_bench (L2 h64 b8 s16 v64) trained with SGD
// (momentum 0.9, lr 0.1), the bench's --optimizer=sgd --learning_rate=0.1.
proto::Job SgdGpt(const examples::ParallelLayout& layout, uint64_t seed) {
  examples::GptConfig config = testing::CodecTestGpt();
  config.learning_rate = 0.1;
  config.warmup_steps = 5;
  config.seed = seed;
  proto::Job job = *examples::BuildGpt(config, layout);
  job.mutable_optimizer()->mutable_sgd()->set_momentum(0.9);
  return job;
}

// The mean loss of the last `tail` iterations: the bench's final loss.
double TailMean(const std::vector<double>& losses, int64_t tail) {
  double sum = 0;
  for (size_t i = losses.size() - tail; i < losses.size(); ++i) sum += losses[i];
  return sum / tail;
}

// Issue 24's 0.5% bar where error feedback is sound: the gpt of
// bench/compression:error_feedback_bench (L2 h64 b8 s16 v64, 2 nodes x 2 devices, dp=2 x
// tp=2, seed 7) trained with SGD (momentum 0.9, lr 0.1) instead of AdamW, int4 (groups of
// 32, what forced int4 uses) on its gradient reductions only. With error feedback the
// final loss (mean of the last 20 iterations) ends within 0.5% of dense; without it, it
// does not. 100 iterations keep the test short: measured with the bench
// (--optimizer=sgd --learning_rate=0.1 --modes=int4+grad,int4+grad+ef --iterations=100),
// seeds 7 / 5 / 3 end -2.18 / -2.17 / -1.28% without error feedback and -0.04 / +0.24 /
// +0.14% with it; over 200 iterations, seeds 1-8 end -0.5 / -0.1 / -1.3 / +0.9 / -1.7 /
// +0.2 / -1.8 / +0.1% without it and -0.1 / +0.0 / +0.1 / -0.1 / +0.2 / -0.1 / -0.0 /
// -0.1% with it. Under AdamW the same steps end +1.7% (mean of 8 seeds) and error
// feedback makes that worse (docs/sbp_and_boxing.md, "Error feedback"): the optimizer's
// doing, not the residual's. Without the residual this run is the one without error
// feedback; with the residual kept with the wrong sign it ends far off (checked by
// breaking KeepResidual in kernels/compression/compressed_collectives.cc).
TEST(ErrorFeedbackTest, Int4GradientsOfTheGptUnderSgdEndWithinHalfAPercentOfDense) {
  constexpr int64_t kIterations = 100, kTail = 20;
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Job job = SgdGpt(layout, 7);
  const std::vector<double> dense = Train(Compile(job, layout, CompressionMode::kOff), kIterations);
  ASSERT_EQ(dense.size(), static_cast<size_t>(kIterations));
  proto::Plan int4 = Compile(job, layout, CompressionMode::kForced);
  int gradient_steps = 0;
  for (proto::BoxingDef& boxing : *int4.mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
      if (!step.compression().error_feedback()) step.clear_compression();
      if (!step.compression().error_feedback()) continue;
      ++gradient_steps;
      EXPECT_EQ(step.compression().kind(), proto::Compression::INT4) << boxing.tensor();
      EXPECT_EQ(step.compression().block_size(), 32) << boxing.tensor();
    }
  }
  ASSERT_TRUE(SealPlan(&int4).ok());
  ASSERT_GE(gradient_steps, 8);
  const std::vector<double> with = Train(int4, kIterations);
  const std::vector<double> without = Train(WithoutErrorFeedback(int4), kIterations);
  ASSERT_EQ(with.size(), dense.size());
  ASSERT_EQ(without.size(), dense.size());
  auto tail_mean = [&](const std::vector<double>& losses) { return TailMean(losses, kTail); };
  const double gap_with = tail_mean(with) / tail_mean(dense) - 1;
  const double gap_without = tail_mean(without) / tail_mean(dense) - 1;
  printf("gpt (SGD) 2 nodes x 2 devices, int4 G=32 gradient reductions, %lld iterations: final loss %+.3f%% with "
         "error feedback, %+.3f%% without (dense final %.6f)\n",
         static_cast<long long>(kIterations), 100 * gap_with, 100 * gap_without, tail_mean(dense));
  for (size_t i = 0; i < with.size(); ++i) ASSERT_TRUE(std::isfinite(with[i])) << "iteration " << i;
  // The codec ran: dense would match to float reassociation.
  double largest_difference = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    largest_difference = std::max(largest_difference, std::abs(with[i] - dense[i]));
  }
  EXPECT_GT(largest_difference, 1e-4);
  EXPECT_LT(std::abs(gap_with), 0.005);
  EXPECT_GT(std::abs(gap_without), 0.01);

  // The shard owners' residuals of the 11 all-gathers that end the layer norms' and wpe's
  // gradient chains (session 47): without them alone, those int4 gathers pull the run
  // down as int4 gradients without error feedback do (bench, 200 iterations, seeds 1-4:
  // -0.41% +- 0.15 against -0.04% +- 0.04 with them; here, seed 7 over 100 iterations,
  // -0.48% against -0.06%).
  proto::Plan gathers_without = int4;
  int gathers = 0;
  for (proto::BoxingDef& boxing : *gathers_without.mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
      if (step.kind() != proto::STEP_ALL_GATHER || !step.compression().error_feedback()) continue;
      step.mutable_compression()->clear_error_feedback();
      ++gathers;
    }
  }
  ASSERT_TRUE(SealPlan(&gathers_without).ok());
  EXPECT_EQ(gathers, 11);
  const double gap_gathers_without = tail_mean(Train(gathers_without, kIterations)) / tail_mean(dense) - 1;
  printf("the same without the all-gathers' residuals: %+.3f%%\n", 100 * gap_gathers_without);
  EXPECT_LT(gap_gathers_without, gap_with - 0.002);
}

// Issue 24's "error feedback hurts when every step is int4" (docs/sbp_and_boxing.md,
// "Error feedback"): the residual is not misapplied there. With the forward activations
// int4 too, error feedback makes the int4 gradient reductions end where dense gradient
// reductions do (the run with only the forward activations int4), as it makes them end
// at dense without int4 activations; what it takes away is the bias of int4 gradients
// without it, which on this synthetic task happens to lower the final loss (-0.5% on
// average with dense activations, more with int4 ones). Measured with the bench
// (--optimizer=sgd --learning_rate=0.1, 200 iterations, final-loss gap to dense, seeds
// 1-4): int4+fwd +1.9 / +2.2 / +4.0 / +2.3%, int4+fwd+grad+ef +2.4 / +1.2 / +2.7 / +2.4%,
// int4+fwd+grad +0.4 / -0.2 / +2.1 / +0.9%. Seed 4, 100 iterations here: -0.25% with
// error feedback, -3.17% without where first measured, +0.32% and -3.29% on session 47's
// machine (the float sums differ between CPUs; the bench's int4+fwd+grad+ef+agd gives the
// same there); with the residual zeroed in KeepResidual
// (kernels/compression/compressed_collectives.cc) "with" is "without" and the test fails.
TEST(ErrorFeedbackTest, WithInt4ForwardActivationsInt4GradientsWithErrorFeedbackEndWhereDenseGradientsDo) {
  constexpr int64_t kIterations = 100, kTail = 20;
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Job job = SgdGpt(layout, 4);
  const proto::Plan forced = Compile(job, layout, CompressionMode::kForced);
  // Which steps keep int4: the forward activations' (neither a gradient reduction nor a
  // step of backward, whose ops autodiff names "<forward op>_grad/<op>"), and with
  // `gradients` the gradient reductions (the steps marked with error feedback, but for
  // the all-gathers that end a layer norm's gradient chain, which run dense here as they
  // did when this test was measured; docs/sbp_and_boxing.md gives their share).
  auto keep = [&](bool gradients) {
    proto::Plan plan = forced;
    int forward_steps = 0, gradient_steps = 0;
    for (proto::BoxingDef& boxing : *plan.mutable_boxings()) {
      for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
        if (step.compression().kind() == proto::Compression::NONE) continue;
        const bool gradient = step.compression().error_feedback() && step.kind() != proto::STEP_ALL_GATHER;
        const bool forward = !gradient && boxing.producer_op().find("_grad/") == std::string::npos;
        if (forward) ++forward_steps;
        if (gradient && gradients) ++gradient_steps;
        if (!forward && !(gradient && gradients)) step.clear_compression();
      }
    }
    // A gradient bucket travels in its members' format: dense with them.
    if (!gradients) {
      for (proto::GradientBucketDef& bucket : *plan.mutable_buckets()) bucket.clear_compression();
    }
    EXPECT_GE(forward_steps, 4);
    if (gradients) {
      EXPECT_GE(gradient_steps, 8);
    }
    EXPECT_TRUE(SealPlan(&plan).ok());
    return plan;
  };
  const proto::Plan forward_and_gradients = keep(true);
  const std::vector<double> forward_only = Train(keep(false), kIterations);
  const std::vector<double> with = Train(forward_and_gradients, kIterations);
  const std::vector<double> without = Train(WithoutErrorFeedback(forward_and_gradients), kIterations);
  ASSERT_EQ(forward_only.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(with.size(), forward_only.size());
  ASSERT_EQ(without.size(), forward_only.size());
  const double gap_with = TailMean(with, kTail) / TailMean(forward_only, kTail) - 1;
  const double gap_without = TailMean(without, kTail) / TailMean(forward_only, kTail) - 1;
  printf("gpt (SGD) 2 nodes x 2 devices, int4 forward activations, %lld iterations: int4 G=32 gradient reductions "
         "end %+.3f%% from dense ones with error feedback, %+.3f%% without\n",
         static_cast<long long>(kIterations), 100 * gap_with, 100 * gap_without);
  // The gradients' codec ran: dense gradient reductions would match to reassociation.
  double largest_difference = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    ASSERT_TRUE(std::isfinite(with[i])) << "iteration " << i;
    largest_difference = std::max(largest_difference, std::abs(with[i] - forward_only[i]));
  }
  EXPECT_GT(largest_difference, 1e-4);
  EXPECT_LT(std::abs(gap_with), 0.005);
  EXPECT_LT(gap_without, -0.01);
}

// A fresh directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir = (fs::path(::testing::TempDir()) / name).string();
  fs::remove_all(dir);
  return dir;
}

// Saves every 3 iterations of 8 with int4 and error feedback on 2 nodes x 2 devices, then
// resumes from the checkpoint after 3: the losses equal the uninterrupted run's (<= 1e-4),
// which they do only because the residuals travel: the same resume from the checkpoint
// stripped of its residuals differs.
TEST(ErrorFeedbackTest, AResumeCarriesTheResiduals) {
  constexpr int64_t kIterations = 8;
  const proto::Plan plan = CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kForced);
  const std::string dir = FreshDir("error_feedback");
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = kIterations;
  options.checkpoint.dir = dir;
  options.checkpoint.every = 3;
  const absl::StatusOr<actors::TrainResult> whole = actors::TrainPlan(plan, options);
  const std::vector<double> uninterrupted = Losses(whole);
  ASSERT_EQ(uninterrupted.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(whole->checkpoints.size(), 2u);
  // Checkpointing the residuals does not change the training.
  EXPECT_EQ(Train(plan, kIterations), uninterrupted);

  // Every device of every marked reduction saved its residual, not all zeros.
  const std::string after3 = (fs::path(dir) / actors::CheckpointDirName(3)).string();
  absl::StatusOr<proto::CheckpointManifest> manifest = actors::ReadManifest(after3);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  int marked_steps = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) marked_steps += step.compression().error_feedback();
  }
  int residuals = 0;
  for (const proto::CheckpointShard& shard : manifest->shards()) {
    residuals += shard.residuals_size();
    for (const proto::CheckpointResidual& residual : shard.residuals()) {
      EXPECT_THAT(residual.key(), HasSubstr(absl::StrCat("on device ", shard.device().node(), ":",
                                                        shard.device().device())));
      EXPECT_EQ(residual.size_bytes(), 4 * residual.elements());
    }
  }
  ASSERT_GT(marked_steps, 0);
  // Every step runs on all 4 devices (a dp reduction in 2 groups of 2, one per tp rank).
  EXPECT_EQ(residuals, 4 * marked_steps);

  actors::TrainOptions resume;
  resume.node = -1;
  resume.iterations = kIterations;
  resume.resume_from = after3;
  std::vector<std::string> warnings;
  // The compression meter warns through the same callback (int4's error bound): only the
  // residuals' warnings are counted.
  resume.on_warning = [&](const std::string& line) {
    if (line.find("error-feedback") != std::string::npos) warnings.push_back(line);
  };
  const std::vector<double> resumed = Losses(actors::TrainPlan(plan, resume));
  ASSERT_EQ(resumed.size(), static_cast<size_t>(kIterations - 3));
  for (size_t i = 0; i < resumed.size(); ++i) {
    EXPECT_NEAR(resumed[i], uninterrupted[3 + i], 1e-4 * std::abs(uninterrupted[3 + i])) << "iteration " << 3 + i;
  }
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  // The same checkpoint with fewer residuals (the manifest listing only those `keep`
  // accepts, resealed): the resumed run starts the others from zero, says so, and leaves
  // the uninterrupted curve.
  auto resume_without = [&](const std::string& name, const std::function<bool(const std::string&)>& keep) {
    proto::CheckpointManifest stripped = *manifest;
    for (proto::CheckpointShard& shard : *stripped.mutable_shards()) {
      google::protobuf::RepeatedPtrField<proto::CheckpointResidual> kept;
      for (const proto::CheckpointResidual& residual : shard.residuals()) {
        if (keep(residual.key())) *kept.Add() = residual;
      }
      *shard.mutable_residuals() = kept;
    }
    stripped.clear_checksum();
    stripped.set_checksum(actors::ManifestChecksum(stripped));
    const std::string stripped_dir = (fs::path(FreshDir(name)) / "iter-00000003").string();
    fs::create_directories(stripped_dir);
    for (const fs::directory_entry& entry : fs::directory_iterator(after3)) {
      fs::copy_file(entry.path(), fs::path(stripped_dir) / entry.path().filename());
    }
    std::string bytes;
    EXPECT_TRUE(stripped.SerializeToString(&bytes));
    FILE* file = fopen((fs::path(stripped_dir) / actors::kManifestFile).c_str(), "wb");
    EXPECT_NE(file, nullptr);
    if (file == nullptr) return std::vector<double>();
    EXPECT_EQ(fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
    fclose(file);
    resume.resume_from = stripped_dir;
    warnings.clear();
    return Losses(actors::TrainPlan(plan, resume));
  };
  auto largest_difference = [&](const std::vector<double>& losses) {
    double largest = 0;
    for (size_t i = 0; i < losses.size(); ++i) largest = std::max(largest, std::abs(losses[i] - uninterrupted[3 + i]));
    return largest;
  };
  const std::vector<double> from_zero = resume_without("error_feedback_stripped", [](const std::string&) {
    return false;
  });
  ASSERT_EQ(from_zero.size(), resumed.size());
  EXPECT_GT(largest_difference(from_zero), 1e-4 * std::abs(uninterrupted[3]));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("holds 0 error-feedback residuals and none for the"));
  EXPECT_THAT(warnings[0], HasSubstr("error feedback starts from zero there and wherever else none fits"));

  // The shard owners' residuals of the gradients' all-gathers (session 47) travel too:
  // all 44 of them (11 gathers on 4 devices) are in the checkpoint, and without them alone
  // the resumed run leaves the uninterrupted curve.
  int gather_residuals = 0;
  for (const proto::CheckpointShard& shard : manifest->shards()) {
    for (const proto::CheckpointResidual& residual : shard.residuals()) {
      gather_residuals += residual.key().find("(all_gather on") != std::string::npos;
    }
  }
  EXPECT_EQ(gather_residuals, 44);
  const std::vector<double> without_gathers =
      resume_without("error_feedback_no_gathers", [](const std::string& key) {
        return key.find("(all_gather on") == std::string::npos;
      });
  ASSERT_EQ(without_gathers.size(), resumed.size());
  printf("resumed after 3 of %lld iterations: largest loss difference to the uninterrupted run %.3g with every "
         "residual, %.3g without the all-gathers' residuals, %.3g without any\n",
         static_cast<long long>(kIterations), largest_difference(resumed), largest_difference(without_gathers),
         largest_difference(from_zero));
  EXPECT_GT(largest_difference(without_gathers), 1e-4 * std::abs(uninterrupted[3]));
}

// On another layout (1 node x 4 devices, dp=2 x tp=2) the residuals do not fit:
// the run resumes, warns once naming a residual, and trains from zero residuals.
TEST(ErrorFeedbackTest, AResumeOnAnotherLayoutStartsTheResidualsFromZero) {
  const proto::Plan plan = CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kForced);
  const std::string dir = FreshDir("error_feedback_layout");
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = 4;
  options.checkpoint.dir = dir;
  options.checkpoint.every = 2;
  ASSERT_TRUE(actors::TrainPlan(plan, options).ok());
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.dp = 2;
  flags.tp = 2;
  const proto::Plan other = CompileGpt(*examples::ParallelLayout::Create(flags), CompressionMode::kForced);
  actors::TrainOptions resume;
  resume.node = -1;
  resume.iterations = 6;  // From the newest checkpoint, after 4.
  resume.resume_from = dir;
  std::vector<std::string> warnings;
  // The compression meter warns through the same callback (int4's error bound): only the
  // residuals' warnings are counted.
  resume.on_warning = [&](const std::string& line) {
    if (line.find("error-feedback") != std::string::npos) warnings.push_back(line);
  };
  const std::vector<double> losses = Losses(actors::TrainPlan(other, resume));
  ASSERT_EQ(losses.size(), 2u);
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("warning: checkpoint '" + (fs::path(dir) / "iter-00000004").string() +
                                     "' holds "));
  EXPECT_THAT(warnings[0], HasSubstr("-float residual of the boxing of '"));
}

}  // namespace
}  // namespace oneflow
