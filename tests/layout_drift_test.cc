// The mlp with the examples' default sizes (batch 64, 64 -> 256 -> 256 -> 256 -> 10, ReLU,
// SGD with momentum 0.9 at lr 0.1, --compression=off) on dp=2, 3, 4, 5, 8, tp=2, 3, 4,
// dp=2 x tp=2 and dp=3 x tp=2 (every layout issue 29 named) against one device, at the
// runtime's full f32 precision (not the 6 digits of the metrics JSON).
//
// What it states: no layout is bit-exact and none needs to be, and the one visible drift
// is a rounding flip, not a sum ordered by the layout. Each layout orders the sums over
// the batch dimension differently (a weight gradient's GEMM is split over the
// data-parallel devices and completed by an all-reduce; tensor parallelism splits others),
// so from iteration 0 every layout's loss differs from one device's by at most about one
// ulp of f32 (measured: 1.16e-7 relative; 2^-23 = 1.19e-7), not growing. In iteration 18
// one pre-activation of the hidden unit 125 is within 1e-7 of zero, and its sign there
// is a rounding outcome (measured, with a temporary print in the fused matmul + ReLU
// kernel: 1 device +4.3e-8, dp=2 -3.4e-8, dp=3 -1.0e-7, dp=4 +1.0e-7, tp=2 +3.7e-9,
// dp=2 x tp=2 +8.1e-8). Where it is negative the ReLU blocks that unit's gradient, a
// whole term, so from iteration 19 dp=2 and dp=3 (negative) follow a second curve, 7.8e-6
// relative from one device's at iteration 19 and up to 2.49e-3 by iteration 28, while the
// others (positive) stay on one device's curve to an ulp through iteration 29. The two
// second-curve layouts agree with each other to an ulp (1.75e-7): the dynamics do not
// amplify rounding, only the flip's whole gradient term. A sum ordered differently by one
// layout alone would show as a third curve, or as growth before the flip.
// With all ten layouts (measured: this test's printed curves), dp=2, dp=3, dp=8 and tp=3
// take the second curve (7.7e-6 .. 7.8e-6 at iteration 19, 9.09e-4 at iteration 29, the
// same value to an ulp on all four) and the other six stay within 1.9e-7 of one device
// through iteration 29: which layouts flip is a rounding outcome (issue 29 saw dp=3, tp=3,
// dp=8 and dp=2 x tp=2 flip with the kernels of its day), the second curve is one curve.
//
// If a kernel change moves the flip (another iteration or other layouts), the printed
// curves show it; re-measure and restate the bounds here. The layout sweep compares 5
// iterations, well before any flip.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"

namespace oneflow {
namespace {

constexpr int kIterations = 30;

struct Layout {
  const char* name;
  int64_t dp, tp;
};

// The losses of the default mlp on dp x tp devices of one node, --compression=off.
std::vector<double> Train(const Layout& layout) {
  examples::ParallelFlags flags;
  flags.devices_per_node = layout.dp * layout.tp;
  flags.dp = layout.dp;
  flags.tp = layout.tp;
  absl::StatusOr<examples::ParallelLayout> parallel = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(parallel.ok()) << parallel.status();
  if (!parallel.ok()) return {};
  absl::StatusOr<proto::Job> job = examples::BuildMlp(examples::MlpConfig(), *parallel);
  EXPECT_TRUE(job.ok()) << job.status();
  examples::CompileSettings settings;
  settings.compression.compression = "off";
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*parallel, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!job.ok() || !options.ok()) return {};
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  actors::TrainOptions train;
  train.iterations = kIterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << layout.name << ": " << result.status();
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

// |a - b| / |b| per iteration.
std::vector<double> RelativeDifferences(const std::vector<double>& losses, const std::vector<double>& reference) {
  std::vector<double> out;
  for (size_t i = 0; i < losses.size() && i < reference.size(); ++i) {
    out.push_back(std::abs(losses[i] - reference[i]) / std::abs(reference[i]));
  }
  return out;
}

// About one ulp of f32 relative (measured largest: 1.16e-7, before the flip and after it
// on each curve; 1.75e-7 between dp=2 and dp=3 on the second curve).
constexpr double kRounding = 3e-7;
// The first iteration whose loss the flip changes (measured: 19, the lead's "iteration 20"
// counted from 1).
constexpr int kFlipIteration = 19;
// The largest distance of the second curve from one device's through iteration 29
// (measured: 2.49e-3 relative, at iteration 28).
constexpr double kSecondCurveDistance = 5e-3;

TEST(LayoutDriftTest, DefaultMlpLeavesOneDeviceOnlyByOneRoundingFlip) {
  const std::vector<double> reference = Train({"1 device", 1, 1});
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  // Every other test's oracle: the one-device curve is a training curve.
  EXPECT_TRUE(testing::MatchesReference(reference, reference, kIterations));
  for (int i = 0; i < kIterations; ++i) std::printf("1 device iteration %d: %.9g\n", i, reference[i]);
  // Every layout issue 29 named: those it saw leave one device's curve (dp=3, tp=3, dp=8,
  // dp=2 x tp=2) and those it saw stay (dp=2, dp=4, dp=5, tp=2, tp=4, dp=3 x tp=2).
  const std::vector<Layout> layouts = {{"dp=2", 2, 1}, {"dp=3", 3, 1}, {"dp=4", 4, 1},      {"dp=5", 5, 1},
                                       {"dp=8", 8, 1}, {"tp=2", 1, 2}, {"tp=3", 1, 3},      {"tp=4", 1, 4},
                                       {"dp=2 x tp=2", 2, 2}, {"dp=3 x tp=2", 3, 2}};
  // The curve of the first layout that leaves one device's: the second curve.
  std::vector<double> second;
  int flipped = 0;
  for (const Layout& layout : layouts) {
    const std::vector<double> losses = Train(layout);
    ASSERT_EQ(losses.size(), reference.size()) << layout.name;
    const std::vector<double> difference = RelativeDifferences(losses, reference);
    for (int i = 0; i < kIterations; ++i) {
      std::printf("%s iteration %d: %.9g (relative difference %.3g)\n", layout.name, i, losses[i], difference[i]);
    }
    // Before the flip: rounding only, on every layout.
    for (int i = 0; i < kFlipIteration; ++i) EXPECT_LE(difference[i], kRounding) << layout.name << " iteration " << i;
    const bool on_first = *std::max_element(difference.begin(), difference.end()) <= kRounding;
    if (on_first) continue;
    ++flipped;
    // Off one device's curve: a jump at the flip (measured 7.7e-6, ~65 ulp at once, not a growth of
    // rounding), then within the measured distance.
    EXPECT_GT(difference[kFlipIteration], 10 * kRounding) << layout.name;
    for (int i = kFlipIteration; i < kIterations; ++i) {
      EXPECT_LE(difference[i], kSecondCurveDistance) << layout.name << " iteration " << i;
    }
    if (second.empty()) {
      second = losses;
      continue;
    }
    // And on the same second curve as the first layout that flipped: one flip, not a
    // layout's own ordering.
    const std::vector<double> from_second = RelativeDifferences(losses, second);
    for (int i = 0; i < kIterations; ++i) {
      EXPECT_LE(from_second[i], kRounding) << layout.name << " iteration " << i << " against the second curve";
    }
  }
  std::printf("%d of %zu layouts on the second curve\n", flipped, layouts.size());
}

}  // namespace
}  // namespace oneflow
