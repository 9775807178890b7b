// Pipeline stage cuts: --stage_blocks places the blocks where it says and trains as one
// device does; bad counts are refused naming the flag; the auto-parallel search's DP over
// the cuts gives a heavy output layer's stage fewer blocks (and the plan, its decision
// record, its recipe and a second search agree), and moves blocks off the first stage
// under a memory limit (1F1B keeps the most micro-batches in flight there).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/status.h"
#include "plan/plan_checksum.h"
#include "tests/auto_parallel_testing.h"
#include "tests/plan_losses.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;
using Counts = std::vector<int64_t>;

constexpr int kIterations = 12;

// The tiny llama with 4 blocks and a vocabulary of 2048: its output layer (hidden 32 x
// 2048) costs about as much as two blocks, so the stage that holds it wants fewer.
examples::LlamaConfig HeavyOutputLlama() {
  examples::LlamaConfig config = testing::TinyLlama();
  config.layers = 4;
  config.vocab = 2048;
  config.seq = 16;
  return config;
}

examples::JobBuilder Llama() {
  return [](const ParallelLayout& layout) { return examples::BuildLlama(HeavyOutputLlama(), layout); };
}

absl::StatusOr<proto::Plan> CompileLayout(const ParallelFlags& flags) {
  OF_ASSIGN_OR_RETURN(const ParallelLayout layout, ParallelLayout::Create(flags));
  OF_ASSIGN_OR_RETURN(const proto::Job job, Llama()(layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  return Compile(job, options);
}

ParallelFlags TwoStages(const Counts& stage_blocks) {
  ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.pp = 2;
  flags.micro_batches = 2;
  flags.stage_blocks = stage_blocks;
  return flags;
}

// Each block's stage as the compiled plan places it: the stage whose first device is the
// first device of the block's first op's placement (Plan.op_sbps).
std::map<std::string, int64_t> BlockStages(const proto::Job& job, const proto::Plan& plan, const ParallelLayout& layout) {
  std::map<std::string, std::string> block_of;
  for (const proto::OpDef& op : job.ops()) {
    if (!op.block().empty()) block_of[op.name()] = op.block();
  }
  std::map<std::string, int64_t> stages;
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) {
    auto block = block_of.find(op.op_name());
    if (block == block_of.end() || stages.count(block->second) > 0 || op.placement().devices().empty()) continue;
    for (int64_t s = 0; s < layout.pp(); ++s) {
      const DeviceId first = layout.StagePlacement(s).devices().front();
      if (op.placement().devices(0).node() == first.node && op.placement().devices(0).device() == first.device) {
        stages[block->second] = s;
      }
    }
  }
  return stages;
}

TEST(AutoParallelStageCutsTest, HandCutsPlaceTheBlocksAndFollowTheOneDeviceCurve) {
  absl::StatusOr<proto::Plan> one_device = CompileLayout(ParallelFlags{});
  ASSERT_TRUE(one_device.ok()) << one_device.status();
  const std::vector<float> reference = testing::TrainedLosses(*one_device, kIterations);
  for (const Counts& cuts : {Counts{3, 1}, Counts{1, 3}}) {
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(TwoStages(cuts));
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<proto::Job> job = Llama()(*layout);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<proto::Plan> plan = CompileLayout(TwoStages(cuts));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::map<std::string, int64_t> expected =
        cuts[0] == 3 ? std::map<std::string, int64_t>{{"layers0", 0}, {"layers1", 0}, {"layers2", 0}, {"layers3", 1}}
                     : std::map<std::string, int64_t>{{"layers0", 0}, {"layers1", 1}, {"layers2", 1}, {"layers3", 1}};
    EXPECT_EQ(BlockStages(*job, *plan, *layout), expected) << cuts[0] << "," << cuts[1];
    testing::ExpectLossesNear(testing::TrainedLosses(*plan, kIterations), reference, 1e-4,
                              absl::StrCat("stage_blocks ", cuts[0], ",", cuts[1]));
  }
}

TEST(AutoParallelStageCutsTest, BadStageBlocksNameTheFlag) {
  EXPECT_EQ(examples::ParseStageBlocks("3,x").status().message(),
            "--stage_blocks=3,x: 'x' is not a block count; give comma-separated counts, one per --pp stage, e.g. "
            "--stage_blocks=3,5");
  EXPECT_EQ(examples::ParseStageBlocks("3,1").value(), (Counts{3, 1}));
  EXPECT_TRUE(examples::ParseStageBlocks("").value().empty());
  EXPECT_EQ(ParallelLayout::Create(TwoStages({4})).status().message(),
            "--stage_blocks=4 gives 1 stages, but --pp=2 has 2; give one block count per stage");
  EXPECT_EQ(ParallelLayout::Create(TwoStages({4, 0})).status().message(),
            "--stage_blocks=4,0: every pipeline stage needs at least one block (got 0)");
  ParallelFlags interleaved = TwoStages({2, 2});
  interleaved.virtual_stages = 2;
  EXPECT_EQ(ParallelLayout::Create(interleaved).status().message(),
            "--stage_blocks=2,2 cuts consecutive blocks, but --virtual_stages=2 interleaves chunks of equal blocks; "
            "drop one of them");
  absl::StatusOr<ParallelLayout> five = ParallelLayout::Create(TwoStages({3, 2}));
  ASSERT_TRUE(five.ok());
  EXPECT_EQ(Llama()(*five).status().message(),
            "--stage_blocks=3,2 sums to 5 blocks, but --layers=4; give 2 counts summing to 4");
}

// Two nodes of one device over a slow link: the pipeline wins (the activations crossing
// the cut are smaller than the gradients data parallelism would reduce). Under 1F1B the DP
// over the cuts gives the stage with the output layer one block: 3,1 beats the balanced
// cut by the predicted step. Under ZB-H1, the search's choice, the heavy output layer's
// weight gradient (W) runs beside the first stage's backward, and the balanced cut wins,
// 3,1 its near twin.
TEST(AutoParallelStageCutsTest, TheSearchCutsAHeavyOutputLayerOffTheLastStage) {
  examples::AutoParallelRequest request;
  request.cluster.nodes = 2;
  request.cluster.devices_per_node = 1;
  request.cluster.inter_node_bandwidth = 2e7;
  request.settings.compression.compression = "off";  // the oracle compares dense boxing
  request.settings.links.inter_node_bandwidth = 2e7;
  request.settings.links.inter_node_bandwidth_given = true;
  request.alternatives = 64;  // the record keeps the 1F1B twins too
  absl::StatusOr<examples::AutoParallelResult> result = examples::AutoParallelCompile(Llama(), request);
  ASSERT_TRUE(result.ok()) << result.status();
  const proto::AutoParallelDecision& decision = result->plan.auto_parallel();
  const proto::AutoParallelLayout& chosen = decision.chosen().layout();
  ASSERT_EQ(chosen.pp(), 2) << auto_parallel::LayoutName(chosen);
  EXPECT_EQ(chosen.schedule(), proto::PIPELINE_SCHEDULE_ZB_H1) << auto_parallel::LayoutName(chosen);
  EXPECT_TRUE(chosen.stage_blocks().empty()) << auto_parallel::LayoutName(chosen);
  // The 1F1B twins in the record (2 micro-batches): the cut 3,1 cheaper than the balanced
  // one; and the chosen layout's own cut twin listed, beaten by the predicted step.
  const proto::AutoParallelPrediction* cut = nullptr;
  const proto::AutoParallelPrediction* balanced = nullptr;
  bool cut_twin_listed = false;
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
    const proto::AutoParallelLayout& layout = alternative.layout();
    if (layout.schedule() == proto::PIPELINE_SCHEDULE_ZB_H1 && layout.micro_batches() == chosen.micro_batches() &&
        layout.recompute() == chosen.recompute() && !layout.stage_blocks().empty()) {
      cut_twin_listed = true;
      EXPECT_EQ(Counts(layout.stage_blocks().begin(), layout.stage_blocks().end()), (Counts{3, 1}));
      EXPECT_GT(auto_parallel::StepSeconds(alternative), auto_parallel::StepSeconds(decision.chosen()));
    }
    if (layout.schedule() != proto::PIPELINE_SCHEDULE_1F1B || layout.micro_batches() != 2 ||
        layout.recompute() != proto::RECOMPUTE_NONE) {
      continue;
    }
    (layout.stage_blocks().empty() ? balanced : cut) = &alternative;
  }
  EXPECT_TRUE(cut_twin_listed);
  ASSERT_NE(cut, nullptr);
  ASSERT_NE(balanced, nullptr);
  EXPECT_EQ(Counts(cut->layout().stage_blocks().begin(), cut->layout().stage_blocks().end()), (Counts{3, 1}));
  EXPECT_LT(auto_parallel::StepSeconds(*cut), auto_parallel::StepSeconds(*balanced));
  // The recipe of the 1F1B cut, as the example writes it, carries the cuts (a re-plan
  // compiles the same stages), and the cut trains as one device.
  absl::StatusOr<ParallelLayout> cut_layout =
      ParallelLayout::Create(examples::FlagsForLayout(request.cluster, cut->layout()));
  ASSERT_TRUE(cut_layout.ok()) << cut_layout.status();
  EXPECT_EQ(cut_layout->stage_blocks(), (Counts{3, 1}));
  absl::StatusOr<proto::Job> cut_job = Llama()(*cut_layout);
  ASSERT_TRUE(cut_job.ok()) << cut_job.status();
  const examples::CompileSettings cut_settings = examples::SettingsForLayout(request.settings, cut->layout());
  absl::StatusOr<proto::CompileRecipe> recipe =
      examples::MakeRecipe(*cut_job, *cut_layout, cut_settings, /*auto_parallel=*/true);
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_EQ(examples::LayoutFlagsFromRecipe(*recipe).stage_blocks, (Counts{3, 1}));
  std::string dump;
  absl::StatusOr<CompileOptions> cut_options = examples::CompileOptionsFor(*cut_layout, cut_settings, &dump);
  ASSERT_TRUE(cut_options.ok()) << cut_options.status();
  absl::StatusOr<proto::Plan> cut_plan = Compile(*cut_job, *cut_options);
  ASSERT_TRUE(cut_plan.ok()) << cut_plan.status();
  // Deterministic: a second search writes the same bytes.
  absl::StatusOr<examples::AutoParallelResult> again = examples::AutoParallelCompile(Llama(), request);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::string> first_bytes = SerializePlanDeterministically(result->plan);
  absl::StatusOr<std::string> second_bytes = SerializePlanDeterministically(again->plan);
  ASSERT_TRUE(first_bytes.ok() && second_bytes.ok());
  EXPECT_TRUE(*first_bytes == *second_bytes) << "two searches wrote different plans";
  absl::StatusOr<proto::Plan> one_device = CompileLayout(ParallelFlags{});
  ASSERT_TRUE(one_device.ok()) << one_device.status();
  const std::vector<float> reference = testing::TrainedLosses(*one_device, kIterations);
  testing::ExpectLossesNear(testing::TrainedLosses(result->plan, kIterations), reference, 1e-4, "searched ZB-H1");
  testing::ExpectLossesNear(testing::TrainedLosses(*cut_plan, kIterations), reference, 1e-4, "1F1B cut 3,1");
}

TEST(AutoParallelStageCutsTest, AMemoryLimitMovesBlocksOffTheFirstStage) {
  // Sequences of 64: the activations 1F1B keeps in flight outweigh a block's parameters
  // and optimizer state, so a block moved to the last stage costs it less than it saves
  // the first.
  examples::GptConfig config = TinyGpt();
  config.layers = 4;
  config.seq = 64;
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  const auto_parallel::PriceOptions options = TwoNodesOfOneDevice(12.5e9, 1e11, 1e10);
  const proto::AutoParallelLayout balanced = LayoutOf(1, 1, 2, 4);
  absl::StatusOr<proto::AutoParallelPrediction> priced = auto_parallel::PriceLayout(profile, options, balanced);
  ASSERT_TRUE(priced.ok()) << priced.status();
  // Without a limit the tiny gpt's blocks are even and its output layer light: balanced.
  absl::StatusOr<std::optional<Counts>> free = auto_parallel::ChooseStageBlocks(profile, options, balanced, 0, nullptr);
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_FALSE(free->has_value()) << (*free)->at(0);
  const int64_t limit = priced->peak_bytes() - 1;
  absl::StatusOr<std::optional<Counts>> cuts = auto_parallel::ChooseStageBlocks(profile, options, balanced, limit, nullptr);
  ASSERT_TRUE(cuts.ok()) << cuts.status();
  ASSERT_TRUE(cuts->has_value());
  EXPECT_EQ(**cuts, (Counts{1, 3}));
  proto::AutoParallelLayout cut = balanced;
  for (int64_t blocks : **cuts) cut.add_stage_blocks(blocks);
  absl::StatusOr<proto::AutoParallelPrediction> cut_priced = auto_parallel::PriceLayout(profile, options, cut);
  ASSERT_TRUE(cut_priced.ok()) << cut_priced.status();
  EXPECT_LE(cut_priced->peak_bytes(), limit);
  // Counts that do not cover the blocks are refused naming them.
  proto::AutoParallelLayout wrong = balanced;
  wrong.add_stage_blocks(2);
  wrong.add_stage_blocks(1);
  EXPECT_EQ(auto_parallel::PriceLayout(profile, options, wrong).status().message(),
            "dp=1 tp=1 pp=2 stage_blocks=2,1 micro_batches=4 zero=0 recompute=none: stage_blocks=2,1 must give each of "
            "the 2 stages at least one block, summing to the 4 blocks or layers of 'gpt'");
}

}  // namespace
}  // namespace oneflow
