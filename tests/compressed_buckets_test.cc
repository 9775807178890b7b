// Gradient buckets of compressed reductions (compiler/passes/gradient_bucketing_pass.h,
// actors/behaviors/bucket_behavior.h, CompressedBucketAllReduce): the gpt on 2 nodes x
// 2 devices (dp=2 across the nodes x tp=2) with --compression=int8 and with int4 and
// error feedback, and the llama at dp=2 x tp=2 with --gradient_wire=bf16, issue far
// fewer compressed gradient reductions per iteration with buckets than without (exact
// counts below), move the same bytes, and train to the same losses bit for bit: a
// bucket encodes each member by itself, with its own step's seed and residual. A
// checkpoint of the plan without buckets resumes into the plan with them (the residuals
// keep their keys).
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/reduction_overlap.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"
#include "tests/bucket_resume.h"
#include "tests/plan_losses.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {


proto::Plan CompileFor(const absl::StatusOr<proto::Job>& job, const examples::ParallelLayout& layout,
                       const examples::CompileSettings& settings, bool error_feedback = false) {
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, settings, nullptr);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!job.ok() || !options.ok()) return proto::Plan();
  options->error_feedback = error_feedback;
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

// The gpt of the compression tests on 2 nodes x 2 devices, as `examples/gpt/gpt
// --compression=CODEC [--codec_rounding=stochastic] --bucket_mb=M` compiles it.
proto::Plan CompileGpt(const std::string& codec, double bucket_mb, bool error_feedback = false) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  examples::GptConfig config = testing::CodecTestGpt();
  config.learning_rate = 3e-3;
  config.warmup_steps = 3;
  examples::CompileSettings settings;
  settings.bucket_mb = bucket_mb;
  settings.compression.compression = codec;
  if (error_feedback) settings.compression.codec_rounding = "stochastic";
  return CompileFor(examples::BuildGpt(config, layout), layout, settings, error_feedback);
}

// A tiny llama at dp=2 x tp=2 on one node of 4 devices, with gradients in bf16 on the wire.
proto::Plan CompileLlamaBf16Wire(double bucket_mb) {
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.dp = 2;
  flags.tp = 2;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::LlamaConfig config = testing::TinyLlama();
  config.vocab = 64;
  examples::CompileSettings settings;
  settings.bucket_mb = bucket_mb;
  settings.compression.compression = "off";
  settings.compression.gradient_wire = "bf16";
  return CompileFor(examples::BuildLlama(config, layout), layout, settings);
}

// Device 0's gradient reductions per iteration: those whose collective carries a codec,
// those that are dense, and of the compressed ones how many ride in buckets.
struct Reductions {
  int compressed = 0;
  int dense = 0;
  int compressed_buckets = 0;
  // Compressed reductions running on their own, by kind.
  int all_reduces_alone = 0;
  int reduce_scatters_alone = 0;
  int64_t bytes_sent = 0;  // device 0's planned wire bytes per iteration
};

Reductions CountReductions(const proto::Plan& plan) {
  const actors::GradientReductions reductions(plan);
  Reductions count;
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    if (actor.collective_id() < 0 || !reductions.Contains(actor)) continue;
    proto::Compression::Kind kind;
    if (actor.has_bucket_id() && actor.bucket_id() >= 0) {
      kind = plan.buckets(static_cast<int>(actor.bucket_id())).compression().kind();
      count.compressed_buckets += kind != proto::Compression::NONE;
    } else {
      kind = plan.boxings(static_cast<int>(actor.boxing_id()))
                 .steps(static_cast<int>(actor.boxing_step()))
                 .compression()
                 .kind();
    }
    (kind != proto::Compression::NONE ? count.compressed : count.dense) += 1;
    if (kind != proto::Compression::NONE && !actor.has_bucket_id()) {
      const proto::BoxingStepKind step_kind = plan.boxings(static_cast<int>(actor.boxing_id()))
                                                  .steps(static_cast<int>(actor.boxing_step()))
                                                  .kind();
      (step_kind == proto::STEP_ALL_REDUCE ? count.all_reduces_alone : count.reduce_scatters_alone) += 1;
    }
  }
  count.bytes_sent = plan.devices(0).bytes_sent_per_iter();
  return count;
}

void PrintCounts(const std::string& what, const Reductions& off, const Reductions& on) {
  printf("%s: device 0 issues %d compressed (%d all-reduces, %d reduce-scatters) + %d dense gradient reductions "
         "per iteration without buckets, %d compressed (%d buckets, %d all-reduces and %d reduce-scatters alone) + %d "
         "dense with them; %lld bytes sent either way\n",
         what.c_str(), off.compressed, off.all_reduces_alone, off.reduce_scatters_alone, off.dense, on.compressed,
         on.compressed_buckets, on.all_reduces_alone, on.reduce_scatters_alone, on.dense,
         static_cast<long long>(on.bytes_sent));
}

// gpt 2 x 2 with --compression=int8 (every eligible boxing): each of the 24 gradients is
// reduced by an int8 reduce-scatter on the tp axis (in the node), then an int8
// all-reduce on the dp axis (across the nodes): 48 compressed collectives per iteration
// on device 0 without buckets. With the default limit the 24 dp all-reduces (1 MiB in
// all: this gpt is small) ride in one int8 bucket and the 24 in-node reduce-scatters in
// one int8 reduce-scatter bucket: 2.
TEST(CompressedBucketsTest, Int8GradientAllReducesOfTheGptRideInBucketsAndTrainBitForBit) {
  const proto::Plan off = CompileGpt("int8", 0);
  const proto::Plan on = CompileGpt("int8", 25);
  const Reductions before = CountReductions(off);
  const Reductions after = CountReductions(on);
  PrintCounts("gpt 2x2 int8", before, after);
  EXPECT_EQ(before.compressed, 48);
  EXPECT_EQ(before.all_reduces_alone, 24);
  EXPECT_EQ(before.reduce_scatters_alone, 24);
  EXPECT_EQ(before.compressed_buckets, 0);
  EXPECT_EQ(after.compressed, 2);
  EXPECT_EQ(after.compressed_buckets, 2);
  EXPECT_EQ(after.all_reduces_alone, 0);
  EXPECT_EQ(after.reduce_scatters_alone, 0);
  // Each member travels in its own groups: the plan's wire bytes do not change.
  EXPECT_EQ(after.bytes_sent, before.bytes_sent);
  for (const proto::GradientBucketDef& bucket : on.buckets()) {
    if (bucket.compression().kind() == proto::Compression::NONE) continue;
    EXPECT_EQ(bucket.compression().kind(), proto::Compression::INT8);
    // The dp all-reduces on axis 0, the in-node reduce-scatters on the tp axis 1.
    const bool scatter = on.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER;
    EXPECT_EQ(bucket.hierarchy_axis(), scatter ? 1 : 0);
  }
  const std::vector<float> unbucketed = testing::TrainedLosses(off, 6);
  ASSERT_EQ(unbucketed.size(), 6u);
  EXPECT_EQ(testing::TrainedLosses(on, 6), unbucketed);
}

// int4 with stochastic rounding and error feedback: every member keeps its own seed and
// residual in the bucket, so the losses are the unbucketed plan's bit for bit, and a
// checkpoint of the unbucketed run (its residuals under each step's key) resumes into
// the bucketed plan on the uninterrupted curve.
TEST(CompressedBucketsTest, Int4WithErrorFeedbackInBucketsTrainsAndResumesLikeWithout) {
  constexpr int64_t kIterations = 6;
  const proto::Plan off = CompileGpt("int4", 0, /*error_feedback=*/true);
  const proto::Plan on = CompileGpt("int4", 25, /*error_feedback=*/true);
  const Reductions after = CountReductions(on);
  PrintCounts("gpt 2x2 int4 + error feedback", CountReductions(off), after);
  ASSERT_GT(after.compressed_buckets, 0);
  for (const proto::GradientBucketDef& bucket : on.buckets()) {
    if (bucket.compression().kind() != proto::Compression::NONE) {
      EXPECT_TRUE(bucket.compression().error_feedback());
      EXPECT_EQ(bucket.compression().rounding(), proto::Compression::STOCHASTIC);
    }
  }
  testing::ExpectBucketedTrainsAndResumesLikeUnbucketed(off, on, kIterations, 3, "compressed_buckets");
}

// llama dp=2 x tp=2 with bf16 on the wire: its 21 gradient all-reduces (on the dp axis)
// and 11 in-node reduce-scatters (the first steps of its 2-D chains) are bf16 (fp32 sums
// in rank order); with buckets the all-reduces ride in 2 bf16 buckets and the
// reduce-scatters in 1: 3 compressed collectives instead of 32.
TEST(CompressedBucketsTest, Bf16WireGradientReductionsOfTheLlamaRideInBucketsAndTrainBitForBit) {
  const proto::Plan off = CompileLlamaBf16Wire(0);
  const proto::Plan on = CompileLlamaBf16Wire(25);
  const Reductions before = CountReductions(off);
  const Reductions after = CountReductions(on);
  PrintCounts("llama dp2 x tp2 bf16 wire", before, after);
  EXPECT_EQ(before.compressed, 32);
  EXPECT_EQ(before.all_reduces_alone, 21);
  EXPECT_EQ(before.reduce_scatters_alone, 11);
  EXPECT_EQ(after.compressed, 3);
  EXPECT_EQ(after.compressed_buckets, 3);
  EXPECT_EQ(after.all_reduces_alone, 0);
  EXPECT_EQ(after.reduce_scatters_alone, 0);
  EXPECT_EQ(after.bytes_sent, before.bytes_sent);
  for (const proto::GradientBucketDef& bucket : on.buckets()) {
    if (bucket.compression().kind() != proto::Compression::NONE) {
      EXPECT_EQ(bucket.compression().kind(), proto::Compression::BF16);
    }
  }
  const std::vector<float> unbucketed = testing::TrainedLosses(off, 6);
  ASSERT_EQ(unbucketed.size(), 6u);
  EXPECT_EQ(testing::TrainedLosses(on, 6), unbucketed);
}

}  // namespace
}  // namespace oneflow
