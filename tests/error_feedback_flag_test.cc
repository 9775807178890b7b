// --error_feedback (the examples' and `oneflow compile`'s flag; examples/common/
// compression_flags.h) reaches the plan: on the gpt over 2 nodes x 2 devices (dp=2 across
// the nodes x tp=2) with --compression=int4 it marks the compressed gradient reductions
// with error feedback, exactly as CompileOptions::error_feedback does (the same plan
// bytes), and nothing else; without it no step carries error feedback; the plan's recipe
// keeps it for a re-plan (--elastic=shrink), and --compression=off with it is refused
// naming both flags. That error feedback trains (residuals carried, checkpointed) is
// tests/error_feedback_test.cc's.
#include <string>

#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "plan/plan_checksum.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

absl::StatusOr<examples::ParallelLayout> TwoNodesByTwo() {
  examples::ParallelFlags flags;
  flags.nodes = 2;
  flags.devices_per_node = 2;
  flags.dp = 2;
  flags.tp = 2;
  return examples::ParallelLayout::Create(flags);
}

struct Counts {
  int compressed = 0;      // compressed steps
  int error_feedback = 0;  // steps carrying error feedback
  int forward_with_error_feedback = 0;  // of them, steps of a forward op's output
};

Counts CountSteps(const proto::Plan& plan) {
  Counts counts;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() != proto::Compression::NONE) ++counts.compressed;
      if (!step.compression().error_feedback()) continue;
      ++counts.error_feedback;
      // A gradient is produced by a backward op ("<forward op>_grad/...") or an
      // accumulation of them; a forward activation's producer has no "_grad".
      if (boxing.producer_op().find("_grad") == std::string::npos &&
          boxing.tensor().find("grad") == std::string::npos) {
        ++counts.forward_with_error_feedback;
      }
    }
  }
  return counts;
}

class ErrorFeedbackFlagTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<examples::ParallelLayout> layout = TwoNodesByTwo();
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = *layout;
    absl::StatusOr<proto::Job> job = examples::BuildGpt(testing::CodecTestGpt(), layout_);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *job;
    settings_.compression.compression = "int4";
  }

  absl::StatusOr<proto::Plan> CompileWith(const examples::CompileSettings& settings) {
    std::string dump;
    absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout_, settings, &dump);
    if (!options.ok()) return options.status();
    return Compile(job_, *options);
  }

  examples::ParallelLayout layout_;
  proto::Job job_;
  examples::CompileSettings settings_;
};

TEST_F(ErrorFeedbackFlagTest, TheFlagMarksTheGradientReductionsAsTheOptionDoes) {
  absl::StatusOr<proto::Plan> without = CompileWith(settings_);
  ASSERT_TRUE(without.ok()) << without.status();
  const Counts plain = CountSteps(*without);
  EXPECT_GT(plain.compressed, 0);
  EXPECT_EQ(plain.error_feedback, 0);

  examples::CompileSettings with_flag = settings_;
  with_flag.compression.error_feedback = true;
  absl::StatusOr<proto::Plan> flagged = CompileWith(with_flag);
  ASSERT_TRUE(flagged.ok()) << flagged.status();
  const Counts fed = CountSteps(*flagged);
  EXPECT_EQ(fed.compressed, plain.compressed);  // the same steps compress
  EXPECT_GT(fed.error_feedback, 0);
  EXPECT_LT(fed.error_feedback, fed.compressed);  // the activations' steps carry none
  EXPECT_EQ(fed.forward_with_error_feedback, 0);

  // The option set by hand: the same plan, byte for byte.
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout_, settings_, &dump);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->error_feedback);
  options->error_feedback = true;
  absl::StatusOr<proto::Plan> by_option = Compile(job_, *options);
  ASSERT_TRUE(by_option.ok()) << by_option.status();
  absl::StatusOr<std::string> option_bytes = SerializePlanDeterministically(*by_option);
  absl::StatusOr<std::string> flag_bytes = SerializePlanDeterministically(*flagged);
  ASSERT_TRUE(option_bytes.ok() && flag_bytes.ok());
  EXPECT_EQ(*option_bytes, *flag_bytes);
}

TEST_F(ErrorFeedbackFlagTest, TheRecipeKeepsIt) {
  examples::CompileSettings with_flag = settings_;
  with_flag.compression.error_feedback = true;
  absl::StatusOr<proto::CompileRecipe> recipe = examples::MakeRecipe(job_, layout_, with_flag, false);
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_TRUE(recipe->error_feedback());
  EXPECT_TRUE(examples::SettingsFromRecipe(*recipe).compression.error_feedback);
  absl::StatusOr<proto::CompileRecipe> plain = examples::MakeRecipe(job_, layout_, settings_, false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(examples::SettingsFromRecipe(*plain).compression.error_feedback);
}

TEST_F(ErrorFeedbackFlagTest, WithoutCompressionItIsRefusedNamingBothFlags) {
  examples::CompileSettings off = settings_;
  off.compression.compression = "off";
  off.compression.error_feedback = true;
  absl::StatusOr<proto::Plan> plan = CompileWith(off);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "--error_feedback acts on compressed gradient reductions, and --compression=off compresses none; use "
            "--compression=auto, fp8, int8 or int4 with it");
}

}  // namespace
}  // namespace oneflow
