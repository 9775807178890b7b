// A 1F1B pipeline's time per micro-batch with its transfers on the path as the schedule
// puts them (compiler/auto_parallel/pipeline_period.h), against values worked by hand, and
// the gpt's tied embedding priced across a pipeline cut between two nodes: the embedding
// sent to the last stage and the last stage's gradient of it, accumulated there, sent back,
// each once per iteration (what the plan does since session 45, gradient_accumulation_pass.h).
#include <vector>

#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/pipeline_period.h"
#include "compiler/auto_parallel/price.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

using auto_parallel::PipelineCutTransfers;
using auto_parallel::PipelineStageSeconds;
using auto_parallel::PipelineTransferCallSeconds;

// A cut whose transfers are all waited on: the link carries what the stages wait for.
PipelineCutTransfers Waited(double forward, double backward) { return {forward, backward, forward, backward}; }

TEST(AutoParallelPipelinePeriodTest, TwoStagesShareTheirCutsTransfersOverTwoMicroBatches) {
  // Stages of 1.0 and 1.2 s, 0.1 s forward and 1.75 s back: the loop across the cut is
  // (1.0 + 1.2 + 0.1 + 1.75) / 2 = 2.025 s a micro-batch for both (each stage priced as its
  // own work plus its receive would be 2.75 and 1.3).
  absl::StatusOr<std::vector<double>> seconds = PipelineStageSeconds({1.0, 1.2}, {{}, Waited(0.1, 1.75)});
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  ASSERT_EQ(seconds->size(), 2u);
  EXPECT_DOUBLE_EQ((*seconds)[0], 2.025);
  EXPECT_DOUBLE_EQ((*seconds)[1], 2.025);
}

TEST(AutoParallelPipelinePeriodTest, TheSlowestStageOrTheBusiestLinkBoundsIt) {
  // A stage slower than the loop keeps its own time, its neighbour the loop: (3 + 1 + 0.2 +
  // 0.2) / 2 = 2.2.
  absl::StatusOr<std::vector<double>> slow_stage = PipelineStageSeconds({3.0, 1.0}, {{}, Waited(0.2, 0.2)});
  ASSERT_TRUE(slow_stage.ok()) << slow_stage.status();
  EXPECT_DOUBLE_EQ((*slow_stage)[0], 3.0);
  EXPECT_DOUBLE_EQ((*slow_stage)[1], 2.2);
  // A link carrying 5 s a micro-batch one way, of which the stage waits for 0.3, is the
  // period of both stages it joins (their loop: (0.5 + 0.5 + 0.1 + 0.3) / 2 = 0.7); the
  // third stage sees the loop of its own cut, (0.5 + 0.5 + 0.1 + 0.1) / 2 = 0.6, above its
  // 0.5.
  absl::StatusOr<std::vector<double>> slow_link =
      PipelineStageSeconds({0.5, 0.5, 0.5}, {{}, {0.1, 0.3, 0.1, 5}, Waited(0.1, 0.1)});
  ASSERT_TRUE(slow_link.ok()) << slow_link.status();
  EXPECT_DOUBLE_EQ((*slow_link)[0], 5.0);
  EXPECT_DOUBLE_EQ((*slow_link)[1], 5.0);
  EXPECT_DOUBLE_EQ((*slow_link)[2], 0.6);
  // The same link carrying only what is waited on: the loop, 0.7.
  absl::StatusOr<std::vector<double>> waited =
      PipelineStageSeconds({0.5, 0.5, 0.5}, {{}, Waited(0.1, 0.3), Waited(0.1, 0.1)});
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_DOUBLE_EQ((*waited)[0], 0.7);
  EXPECT_DOUBLE_EQ((*waited)[1], 0.7);
}

TEST(AutoParallelPipelinePeriodTest, OneStageHasNoTransfers) {
  absl::StatusOr<std::vector<double>> seconds = PipelineStageSeconds({0.7}, {{}});
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_EQ(*seconds, std::vector<double>{0.7});
}

TEST(AutoParallelPipelinePeriodTest, MismatchedOrNegativeTimesAreRefusedByName) {
  absl::StatusOr<std::vector<double>> short_cuts = PipelineStageSeconds({1, 1}, {{}});
  EXPECT_EQ(short_cuts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(short_cuts.status().message(), "the transfers of 2 stages are given for 1 cuts; give 2 (index 0 unused)");
  absl::StatusOr<std::vector<double>> negative = PipelineStageSeconds({1, 1}, {{}, {-1, 1, 1, 1}});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "stage 1: a negative time (stage 1 s; transfers forward -1 s, backward 1 s, links 1 s and 1 s)");
  EXPECT_EQ(PipelineStageSeconds({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AutoParallelPipelinePeriodTest, TheGptsOutputProjectionBorrowsTheTokenEmbedding) {
  // The epilogue's output projection multiplies by the prologue's wte (vocabulary x hidden
  // floats, vocabulary-parallel in the tp probe): the one borrowed variable.
  const examples::GptConfig config = TinyGpt();
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  ASSERT_EQ(profile.units.front().name, "prologue");
  ASSERT_EQ(profile.units.back().name, "epilogue");
  for (size_t u = 0; u + 1 < profile.units.size(); ++u) EXPECT_TRUE(profile.units[u].borrowed_variables.empty()) << u;
  ASSERT_EQ(profile.units.back().borrowed_variables.size(), 1u);
  const auto_parallel::BorrowedVariable& wte = profile.units.back().borrowed_variables[0];
  EXPECT_EQ(wte.tensor, "wte");
  EXPECT_EQ(wte.owner_unit, 0);
  EXPECT_EQ(wte.bytes, config.vocab * config.hidden * 4);
  EXPECT_TRUE(wte.tp_sharded);
}

TEST(AutoParallelPipelinePeriodTest, ATiedEmbeddingsGradientCrossesASlowCutOncePerIteration) {
  // pp = 2 over 2 nodes of one device, 4 micro-batches, a 1 MB/s link without latency and
  // compute a billion times faster than the default: the link is the pipeline's bound. Per
  // micro-batch the activation (2 rows x 16 x 32 floats = 4096 B) goes forward and its
  // gradient back, 0.004096 s each, which is also the loop ((0 + 0 + 0.004096 + 0.004096)
  // / 2): each of the (4 + 2 - 1) micro-batch slots takes 0.004096 s. Once an iteration
  // the embedding (64 x 32 floats = 8192 B, 0.008192 s) goes to stage 1 before its first
  // forward and stage 1's gradient of it, accumulated over the 4 micro-batches, comes back
  // after its last backward; no compute hides either. (Sent every micro-batch, as before
  // session 45, the gradient made each slot 0.004096 + 0.008192 s: exposed 4 x 0.012288 +
  // 0.008192 = 0.057344 s where now it is 4 x 0.004096 + 2 x 0.008192 = 0.032768 s.)
  const examples::GptConfig config = TinyGpt();
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  const auto_parallel::PriceOptions options = TwoNodesOfOneDevice(1e6, 1e20, 1e20);
  const proto::AutoParallelLayout layout = LayoutOf(1, 1, 2, 4);
  absl::StatusOr<proto::AutoParallelPrediction> prediction = auto_parallel::PriceLayout(profile, options, layout);
  ASSERT_TRUE(prediction.ok()) << prediction.status();
  const double activation = 2.0 * 16 * 32 * 4 / 1e6;
  const double embedding = 64.0 * 32 * 4 / 1e6;
  EXPECT_NEAR(prediction->bubble_seconds(), activation, 1e-12);
  EXPECT_NEAR(prediction->exposed_communication_seconds(), 4 * activation + 2 * embedding, 1e-9);
  EXPECT_LT(prediction->compute_seconds(), 1e-9);
}

TEST(AutoParallelPipelinePeriodTest, ATiedEmbeddingsGradientHidesBehindALongBackward) {
  // The same cut with compute a million times slower than the link: the embedding's
  // gradient, sent when the output projection's backward made it, is through before the
  // rest of the stage's backward is, and the embedding reaches stage 1 while stage 0 runs
  // its first forward. The prediction is the one without the borrowed variable.
  const examples::GptConfig config = TinyGpt();
  auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  const auto_parallel::PriceOptions options = TwoNodesOfOneDevice(1e9, 1e6, 1e6);
  const proto::AutoParallelLayout layout = LayoutOf(1, 1, 2, 4);
  absl::StatusOr<proto::AutoParallelPrediction> tied = auto_parallel::PriceLayout(profile, options, layout);
  ASSERT_TRUE(tied.ok()) << tied.status();
  profile.units.back().borrowed_variables.clear();
  absl::StatusOr<proto::AutoParallelPrediction> untied = auto_parallel::PriceLayout(profile, options, layout);
  ASSERT_TRUE(untied.ok()) << untied.status();
  EXPECT_EQ(auto_parallel::StepSeconds(*tied), auto_parallel::StepSeconds(*untied));
  EXPECT_GT(tied->compute_seconds(), 1000 * tied->exposed_communication_seconds());
}

// A stage pays a call per transfer of each neighbouring stage, two per micro-batch: the
// ends of 4 stages one neighbour each (2 c), the middle two both (4 c); one stage has none.
TEST(AutoParallelPipelinePeriodTest, EachStagePaysACallPerTransferOfEachNeighbour) {
  EXPECT_EQ(PipelineTransferCallSeconds(4, 0.5), (std::vector<double>{1.0, 2.0, 2.0, 1.0}));
  EXPECT_EQ(PipelineTransferCallSeconds(2, 0.5), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(PipelineTransferCallSeconds(1, 0.5), (std::vector<double>{0.0}));
}

}  // namespace
}  // namespace oneflow
