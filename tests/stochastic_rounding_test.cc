// Stochastic rounding in the plan (proto::Compression.rounding; docs/sbp_and_boxing.md,
// "Stochastic rounding") end to end: the compiler marks every int4 / int8 step, and only
// those, with a rounding seed that depends on the tensor and the step but not on the
// layout; the runtime draws from (seed, iteration, rank, element), so a run repeats bit
// for bit, differs from the nearest-rounding run, and a resume from a checkpoint gives
// the uninterrupted run's losses (<= 1e-4).
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/checkpoint/checkpoint_format.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

namespace fs = std::filesystem;

proto::Plan CompileGpt(const examples::ParallelLayout& layout, CompressionMode mode, CompressionKind forced,
                       proto::Compression::Rounding rounding) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.compression.mode = mode;
  options.compression.forced = forced;
  options.codec_rounding = rounding;
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(testing::ResumeTestGpt(), layout), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
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

// (tensor, step index) -> rounding seed of every step with stochastic rounding.
std::map<std::pair<std::string, int>, uint64_t> RoundingSeeds(const proto::Plan& plan) {
  std::map<std::pair<std::string, int>, uint64_t> seeds;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (int s = 0; s < boxing.steps_size(); ++s) {
      const proto::Compression& compression = boxing.steps(s).compression();
      if (compression.rounding() == proto::Compression::STOCHASTIC) {
        seeds[{boxing.tensor(), s}] = compression.rounding_seed();
      }
    }
  }
  return seeds;
}

TEST(StochasticRoundingTest, TheCompilerMarksTheIntegerStepsWithALayoutFreeSeed) {
  const examples::ParallelLayout two_nodes = testing::Dp2Tp2(2, 2);
  // Nearest (the default) leaves the field unset everywhere.
  EXPECT_TRUE(RoundingSeeds(CompileGpt(two_nodes, CompressionMode::kForced, CompressionKind::kInt4,
                                       proto::Compression::NEAREST))
                  .empty());
  const proto::Plan plan =
      CompileGpt(two_nodes, CompressionMode::kForced, CompressionKind::kInt4, proto::Compression::STOCHASTIC);
  int compressed = 0;
  std::set<uint64_t> distinct;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::NONE) {
        EXPECT_EQ(step.compression().rounding(), proto::Compression::NEAREST) << boxing.tensor();
        continue;
      }
      ++compressed;
      EXPECT_EQ(step.compression().rounding(), proto::Compression::STOCHASTIC) << boxing.tensor();
      distinct.insert(step.compression().rounding_seed());
    }
  }
  ASSERT_GE(compressed, 8);
  // Every step its own stream.
  EXPECT_EQ(static_cast<int>(distinct.size()), compressed);
  // The seed is the tensor's and the step's, not the layout's: the same boxing steps on
  // one node of four devices carry the same seeds.
  const std::map<std::pair<std::string, int>, uint64_t> here = RoundingSeeds(plan);
  const std::map<std::pair<std::string, int>, uint64_t> one_node = RoundingSeeds(
      CompileGpt(testing::Dp2Tp2(1, 4), CompressionMode::kForced, CompressionKind::kInt4, proto::Compression::STOCHASTIC));
  int shared = 0;
  for (const auto& [key, seed] : one_node) {
    const auto it = here.find(key);
    if (it == here.end()) continue;
    ++shared;
    EXPECT_EQ(it->second, seed) << key.first << " step " << key.second;
  }
  EXPECT_GE(shared, 8);
  // fp8 has no stochastic encoder: forced fp8 keeps nearest on every step.
  EXPECT_TRUE(RoundingSeeds(CompileGpt(two_nodes, CompressionMode::kForced, CompressionKind::kFp8E4M3,
                                       proto::Compression::STOCHASTIC))
                  .empty());
}

// The same plan trains to the same bits twice (the draws depend on no thread or clock),
// and not to the nearest-rounding losses (the field reaches the codec).
TEST(StochasticRoundingTest, ARunRepeatsAndDiffersFromNearest) {
  constexpr int64_t kIterations = 6;
  const examples::ParallelLayout layout = testing::Dp2Tp2(2, 2);
  const proto::Plan stochastic =
      CompileGpt(layout, CompressionMode::kForced, CompressionKind::kInt4, proto::Compression::STOCHASTIC);
  const proto::Plan nearest =
      CompileGpt(layout, CompressionMode::kForced, CompressionKind::kInt4, proto::Compression::NEAREST);
  const std::vector<double> first = Train(stochastic, kIterations);
  ASSERT_EQ(first.size(), static_cast<size_t>(kIterations));
  EXPECT_EQ(Train(stochastic, kIterations), first);
  const std::vector<double> rounded = Train(nearest, kIterations);
  ASSERT_EQ(rounded.size(), first.size());
  // Iteration 0's forward already goes through int4 activations.
  EXPECT_NE(first[0], rounded[0]);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(std::isfinite(first[i]));
}

// Saves every 3 iterations of 8 with forced int4 and stochastic rounding on 2 nodes x 2
// devices and resumes after 3: the resumed losses are the uninterrupted run's (<= 1e-4),
// because iteration 3's draws are keyed by iteration 3, not by acts since the start.
TEST(StochasticRoundingTest, AResumeGivesTheUninterruptedLosses) {
  constexpr int64_t kIterations = 8;
  const proto::Plan plan =
      CompileGpt(testing::Dp2Tp2(2, 2), CompressionMode::kForced, CompressionKind::kInt4, proto::Compression::STOCHASTIC);
  const std::string dir = (fs::path(::testing::TempDir()) / "stochastic_rounding").string();
  fs::remove_all(dir);
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = kIterations;
  options.checkpoint.dir = dir;
  options.checkpoint.every = 3;
  const absl::StatusOr<actors::TrainResult> whole = actors::TrainPlan(plan, options);
  const std::vector<double> uninterrupted = Losses(whole);
  ASSERT_EQ(uninterrupted.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(whole->checkpoints.size(), 2u);

  actors::TrainOptions resume;
  resume.node = -1;
  resume.iterations = kIterations;
  resume.resume_from = (fs::path(dir) / actors::CheckpointDirName(3)).string();
  const std::vector<double> resumed = Losses(actors::TrainPlan(plan, resume));
  ASSERT_EQ(resumed.size(), static_cast<size_t>(kIterations - 3));
  for (size_t i = 0; i < resumed.size(); ++i) {
    EXPECT_NEAR(resumed[i], uninterrupted[3 + i], 1e-4 * std::abs(uninterrupted[3 + i])) << "iteration " << 3 + i;
  }
}

}  // namespace
}  // namespace oneflow
