// Where the compiler puts Compression.fitted_int4_scale (int4 scales chosen by error,
// kernels/compression/int_quant.h): on the gpt over 2 nodes x 2 devices (dp=2 across the
// nodes x tp=2) with --compression=int4, on every compressed step of a variable's gradient
// (buckets included) and on no activation's when CompileOptions::fit_int4_gradient_scale
// asks; by default, with stochastic rounding, and with int8, on none. That it trains closer to dense is
// bench/compression:error_feedback_bench's (docs/sbp_and_boxing.md, "The int4 scale chosen
// by error"); that the codec does what it says is kernels/compression:fitted_int4_scale_test's.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

struct Counts {
  int gradient_steps = 0;    // compressed steps of a variable's gradient
  int gradient_fitted = 0;   // of them, marked
  int activation_steps = 0;  // compressed steps of anything else
  int activation_fitted = 0;
  int buckets = 0;           // compressed buckets
  int buckets_fitted = 0;
};

// The compiler's own word for "a variable's gradient": with CompileOptions::error_feedback
// it marks exactly those steps (tests/error_feedback_flag_test.cc checks that no forward
// activation's step carries it). Names cannot tell: a backward reshape's output
// ("reshape_3_grad/...") is an activation's gradient.
Counts CountSteps(const proto::Plan& plan) {
  Counts counts;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::NONE) continue;
      if (step.compression().error_feedback()) {
        ++counts.gradient_steps;
        counts.gradient_fitted += step.compression().fitted_int4_scale();
      } else {
        ++counts.activation_steps;
        counts.activation_fitted += step.compression().fitted_int4_scale();
      }
    }
  }
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    if (bucket.compression().kind() == proto::Compression::NONE) continue;
    ++counts.buckets;
    counts.buckets_fitted += bucket.compression().fitted_int4_scale();
  }
  return counts;
}

class FittedInt4ScalePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    layout_ = testing::Dp2Tp2(2, 2);
    absl::StatusOr<proto::Job> job = examples::BuildGpt(testing::CodecTestGpt(), layout_);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *job;
  }

  // The plan for --compression=`codec`, with `edit` applied to the compile options.
  template <typename Edit>
  proto::Plan CompiledPlan(const std::string& codec, Edit edit) {
    examples::CompileSettings settings;
    settings.compression.compression = codec;
    std::string dump;
    absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout_, settings, &dump);
    EXPECT_TRUE(options.ok()) << options.status();
    if (!options.ok()) return proto::Plan();
    options->error_feedback = true;  // marks the gradients' steps (CountSteps)
    edit(*options);
    absl::StatusOr<proto::Plan> plan = Compile(job_, *options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *plan : proto::Plan();
  }
  template <typename Edit>
  Counts Compiled(const std::string& codec, Edit edit) {
    return CountSteps(CompiledPlan(codec, edit));
  }

  examples::ParallelLayout layout_;
  proto::Job job_;
};

const auto FitGradients = [](CompileOptions& options) { options.fit_int4_gradient_scale = true; };

TEST_F(FittedInt4ScalePlanTest, EveryGradientStepAndNoActivationStep) {
  const Counts counts = Compiled("int4", FitGradients);
  ASSERT_GT(counts.gradient_steps, 10);
  ASSERT_GT(counts.activation_steps, 10);
  EXPECT_EQ(counts.gradient_fitted, counts.gradient_steps);
  EXPECT_EQ(counts.activation_fitted, 0);
  EXPECT_EQ(counts.buckets_fitted, counts.buckets);
}

TEST_F(FittedInt4ScalePlanTest, NoneWhenOffOrStochasticOrNotInt4) {
  const Counts off = Compiled("int4", [](CompileOptions&) {});  // the default: off
  ASSERT_GT(off.gradient_steps, 10);
  EXPECT_EQ(off.gradient_fitted + off.activation_fitted + off.buckets_fitted, 0);
  const Counts stochastic =
      Compiled("int4", [](CompileOptions& options) {
        options.fit_int4_gradient_scale = true;
        options.codec_rounding = proto::Compression::STOCHASTIC;
      });
  ASSERT_GT(stochastic.gradient_steps, 10);
  EXPECT_EQ(stochastic.gradient_fitted + stochastic.activation_fitted + stochastic.buckets_fitted, 0);
  const Counts int8 = Compiled("int8", FitGradients);
  ASSERT_GT(int8.gradient_steps, 10);
  EXPECT_EQ(int8.gradient_fitted + int8.activation_fitted + int8.buckets_fitted, 0);
}

// The cost model prices the encoder each step runs (sbp/codec_throughput.h
// EncoderVariant): a fitted step's modelled time is its plain twin's plus the fitted
// encode's extra work, an activation's step is priced as before; under stochastic
// rounding every int4 step is dearer (a random draw per element). Steps are matched by
// their boxing's tensor, their place in it and their kind (the SBP choice prices boxings,
// so a dearer codec may move a few).
std::map<std::string, proto::BoxingStepDef> CompressedSteps(const proto::Plan& plan) {
  std::map<std::string, proto::BoxingStepDef> steps;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (int s = 0; s < boxing.steps_size(); ++s) {
      if (boxing.steps(s).compression().kind() == proto::Compression::NONE) continue;
      steps[absl::StrCat(boxing.tensor(), " step ", s, " kind ", boxing.steps(s).kind())] = boxing.steps(s);
    }
  }
  return steps;
}

TEST_F(FittedInt4ScalePlanTest, EachStepIsPricedWithTheEncoderItRuns) {
  const auto plain = CompressedSteps(CompiledPlan("int4", [](CompileOptions&) {}));
  const auto fitted = CompressedSteps(CompiledPlan("int4", FitGradients));
  const auto stochastic = CompressedSteps(CompiledPlan("int4", [](CompileOptions& options) {
    options.codec_rounding = proto::Compression::STOCHASTIC;
  }));
  int dearer_fitted = 0, same_plain = 0, dearer_stochastic = 0;
  for (const auto& [key, before] : plain) {
    if (const auto after = fitted.find(key); after != fitted.end()) {
      if (after->second.compression().fitted_int4_scale()) {
        EXPECT_GT(after->second.seconds(), before.seconds()) << key;
        dearer_fitted += after->second.seconds() > before.seconds();
      } else {
        EXPECT_EQ(after->second.seconds(), before.seconds()) << key;
        same_plain += after->second.seconds() == before.seconds();
      }
    }
    if (const auto after = stochastic.find(key); after != stochastic.end()) {
      EXPECT_EQ(after->second.compression().rounding(), proto::Compression::STOCHASTIC) << key;
      EXPECT_GT(after->second.seconds(), before.seconds()) << key;
      dearer_stochastic += after->second.seconds() > before.seconds();
    }
  }
  EXPECT_GT(dearer_fitted, 10);
  EXPECT_GT(same_plain, 10);
  EXPECT_GT(dearer_stochastic, 10);
}

// --nocompress_in_node (CompressionFlags::compress_in_node false): on this layout tp is
// inside each node and dp crosses them, so the int4 steps left are the gradients'
// cross-node reductions, every one fitted, and no activation's step is compressed.
TEST_F(FittedInt4ScalePlanTest, CrossNodeOnlyLeavesTheGradientReductions) {
  const Counts every_step = Compiled("int4", FitGradients);
  // The flags of the bar: --compression=int4 --nocompress_in_node
  // --int4_gradient_scale=fitted.
  examples::CompileSettings settings;
  settings.compression.compression = "int4";
  settings.compression.compress_in_node = false;
  settings.compression.int4_gradient_scale = "fitted";
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout_, settings, &dump);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->compression.forced_intra_node);
  EXPECT_TRUE(options->fit_int4_gradient_scale);
  options->error_feedback = true;
  absl::StatusOr<proto::Plan> plan = Compile(job_, *options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Counts cross_node = CountSteps(*plan);
  EXPECT_EQ(cross_node.activation_steps, 0);
  EXPECT_GT(cross_node.gradient_steps + cross_node.buckets, 0);
  EXPECT_LT(cross_node.gradient_steps, every_step.gradient_steps);
  EXPECT_EQ(cross_node.gradient_fitted, cross_node.gradient_steps);
  EXPECT_EQ(cross_node.buckets_fitted, cross_node.buckets);
}

// The plan's recipe keeps both flags, so an elastic re-plan compiles the same steps; a
// recipe of the defaults reads back as the defaults.
TEST_F(FittedInt4ScalePlanTest, TheRecipeKeepsTheFlags) {
  examples::CompileSettings settings;
  settings.compression.compression = "int4";
  settings.compression.compress_in_node = false;
  settings.compression.int4_gradient_scale = "fitted";
  absl::StatusOr<proto::CompileRecipe> recipe = examples::MakeRecipe(job_, layout_, settings, false);
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  const examples::CompileSettings read = examples::SettingsFromRecipe(*recipe);
  EXPECT_FALSE(read.compression.compress_in_node);
  EXPECT_EQ(read.compression.int4_gradient_scale, "fitted");
  examples::CompileSettings defaults;
  defaults.compression.compression = "int4";
  absl::StatusOr<proto::CompileRecipe> plain = examples::MakeRecipe(job_, layout_, defaults, false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->int4_gradient_scale().empty());
  EXPECT_TRUE(examples::SettingsFromRecipe(*plain).compression.compress_in_node);
  EXPECT_EQ(examples::SettingsFromRecipe(*plain).compression.int4_gradient_scale, "max");
}

}  // namespace
}  // namespace oneflow
