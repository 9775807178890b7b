// Issue 24's "forced int4 on the gpt within 0.5% of dense's final loss after 200
// iterations", under the gpt example's own optimizer (AdamW, lr 3e-4, 100 warm-up steps then
// cosine; examples::GptConfig{}), on 2 nodes x 2 devices (dp=2 across the nodes x tp=2), in
// one process, compiled from the flags a user gives the example:
//   --compression=int4 --nocompress_in_node --int4_gradient_scale=fitted
// The forced codec then sits on the hops that cross nodes (DESIGN.md: "compression applies
// to the hops that cross nodes"): the gradient reductions over dp; every in-node
// tensor-parallel step stays dense. Each int4 group's scale is the one of seven divisors of
// its largest magnitude that makes the least squared error (kernels/compression/int_quant.h).
//
// Measured with bench/compression:error_feedback_bench --model=example (the same model and
// layout; docs/sbp_and_boxing.md, "The int4 scale chosen by error"), seeds 1-8: +0.45% to
// +0.49% with the fitted scale, every seed within the bar, and +0.78% to +0.84% with each
// group scaled by its largest magnitude over 7 (--int4_gradient_scale=max, the default);
// seed 2: +0.453% and +0.790% there (every gradient its own call), +0.457% and +0.785% here
// (the example's buckets: the same encodings, summed in another order). A floating-point-size perturbation of the initial weights
// (the bench's +init) moves seed 2's fitted gap by 0.005 points, a tenth of its distance to
// the bar. The runs are deterministic.
//
// What the bar does not cover, and this test does not claim: --compression=int4 without
// --nocompress_in_node also compresses the in-node activations' reductions and ends +5% above
// dense; error feedback under AdamW moves these gaps up (+0.84% fitted), because AdamW's second
// moment sees the codec's noise (docs/sbp_and_boxing.md, "Forced int4 on the hops that cross
// nodes, and why AdamW is the obstacle"); under SGD it brings int4 gradients to dense
// (tests/error_feedback_test.cc).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

constexpr int64_t kIterations = 200;
constexpr int64_t kTail = 20;  // the final loss: the mean of the last kTail iterations
constexpr uint64_t kSeed = 2;

struct TrainedRun {
  std::vector<double> losses;
  int int4_steps = 0;           // compressed steps of the plan, every one int4
  int in_node_compressed = 0;   // compressed steps whose group stays in a node
  int fitted_steps = 0;         // steps whose int4 groups take the fitted scale
};

// The example's plan for `compression` / `scale` with --nocompress_in_node (for "off":
// the dense plan), trained kIterations in one process.
TrainedRun Train(const proto::Job& job, const examples::ParallelLayout& layout, const std::string& compression,
          const std::string& scale) {
  examples::CompileSettings settings;
  settings.compression.compression = compression;
  if (compression != "off") {
    settings.compression.compress_in_node = false;
    settings.compression.int4_gradient_scale = scale;
  }
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!options.ok()) return {};
  absl::StatusOr<proto::Plan> plan = Compile(job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  TrainedRun run;
  auto count = [&](const proto::Compression& compression, bool in_node) {
    if (compression.kind() == proto::Compression::NONE) return;
    EXPECT_EQ(compression.kind(), proto::Compression::INT4);
    ++run.int4_steps;
    run.in_node_compressed += in_node;
    run.fitted_steps += compression.fitted_int4_scale();
  };
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      // Axis 0 of the [2, 2] hierarchy is dp, across the nodes; axis 1 is tp, in a node.
      count(step.compression(), step.hierarchy_axis() != 0);
    }
  }
  for (const proto::GradientBucketDef& bucket : plan->buckets()) {
    count(bucket.compression(), bucket.hierarchy_axis() != 0);
  }
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return run;
  for (const actors::IterationMetrics& iteration : result->iterations) run.losses.push_back(iteration.loss);
  return run;
}

double FinalLoss(const std::vector<double>& losses) {
  double sum = 0;
  for (size_t i = losses.size() - kTail; i < losses.size(); ++i) sum += losses[i];
  return sum / kTail;
}

TEST(Int4CrossNodeAdamWTest, FittedInt4OnTheHopsThatCrossNodesEndsWithinHalfAPercentOfDense) {
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  examples::GptConfig config;  // the example's defaults: AdamW lr 3e-4, warm-up 100, cosine
  config.seed = kSeed;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();

  const TrainedRun dense = Train(*job, layout, "off", "max");
  const TrainedRun fitted = Train(*job, layout, "int4", "fitted");
  const TrainedRun largest = Train(*job, layout, "int4", "max");
  ASSERT_EQ(dense.losses.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(fitted.losses.size(), dense.losses.size());
  ASSERT_EQ(largest.losses.size(), dense.losses.size());
  EXPECT_EQ(dense.int4_steps, 0);

  // The codec is where the flags put it: int4 on the node-crossing gradient reductions, none
  // in a node; the fitted scale on every one of them with `fitted`, on none with `max`.
  EXPECT_GE(fitted.int4_steps, 8);
  EXPECT_EQ(fitted.in_node_compressed, 0);
  EXPECT_EQ(fitted.fitted_steps, fitted.int4_steps);
  EXPECT_EQ(largest.int4_steps, fitted.int4_steps);
  EXPECT_EQ(largest.in_node_compressed, 0);
  EXPECT_EQ(largest.fitted_steps, 0);

  for (size_t i = 0; i < fitted.losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(fitted.losses[i])) << "iteration " << i;
    ASSERT_TRUE(std::isfinite(largest.losses[i])) << "iteration " << i;
  }
  const double fitted_gap = FinalLoss(fitted.losses) / FinalLoss(dense.losses) - 1;
  const double largest_gap = FinalLoss(largest.losses) / FinalLoss(dense.losses) - 1;
  printf("gpt example (AdamW), 2 nodes x 2 devices, int4 on the node-crossing gradient reductions, %lld "
         "iterations, seed %llu: final loss %+.3f%% with the fitted scale, %+.3f%% with max/7 (dense final %.6f)\n",
         static_cast<long long>(kIterations), static_cast<unsigned long long>(kSeed), 100 * fitted_gap,
         100 * largest_gap, FinalLoss(dense.losses));
  // The bar, and that the fitted scale is what meets it: with max/7 the same steps end
  // outside it. Both gaps are above 0: int4's noise slows this AdamW run, it does not help.
  EXPECT_LT(std::abs(fitted_gap), 0.005);
  EXPECT_GT(fitted_gap, 0.002);
  EXPECT_GT(largest_gap, 0.006);
}

}  // namespace
}  // namespace oneflow
