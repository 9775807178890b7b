// PlaceBlocksOnStages: the gpt built without stages, its blocks put on the stages of a
// pipeline layout, trains as the gpt builder's own pipeline of the same layout (1F1B and
// interleaved), with one stage move per block entry; a layout with more stages than blocks
// is refused.
#include "examples/common/block_stages.h"

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/plan_losses.h"

namespace oneflow::examples {
namespace {

ParallelLayout LayoutOf(int64_t devices, int64_t pp, int64_t micro_batches, int64_t virtual_stages = 1) {
  ParallelFlags flags;
  flags.devices_per_node = devices;
  flags.pp = pp;
  flags.micro_batches = micro_batches;
  flags.virtual_stages = virtual_stages;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

GptConfig SmallGpt(int64_t layers) {
  GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  config.layers = layers;
  return config;
}

// The gpt built for one device's placement with the layout's micro-batches: what a
// layout-free text gives JobFromGraphText before its blocks are staged.
proto::Job Unstaged(const GptConfig& config, const ParallelLayout& layout) {
  absl::StatusOr<proto::Job> job = BuildGpt(config, LayoutOf(1, 1, layout.micro_batches()));
  EXPECT_TRUE(job.ok()) << job.status();
  *job->mutable_default_placement() = layout.placement().ToProto();
  return *job;
}

std::vector<float> Losses(const proto::Job& job, const ParallelLayout& layout, const std::string& schedule) {
  CompileSettings settings;
  settings.pp_schedule = schedule;
  std::string dump;
  absl::StatusOr<CompileOptions> options = CompileOptionsFor(layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? testing::TrainedLosses(*plan, 4) : std::vector<float>();
}

void ExpectTrainsAsTheBuilder(const GptConfig& config, const ParallelLayout& layout, const std::string& schedule,
                              int moves) {
  proto::Job staged = Unstaged(config, layout);
  ASSERT_TRUE(PlaceBlocksOnStages(layout, &staged).ok());
  int identities = 0;
  for (const proto::OpDef& op : staged.ops()) {
    if (op.type() != "identity") continue;
    ++identities;
    EXPECT_NE(op.name().find("/to_stage"), std::string::npos) << op.name();
  }
  EXPECT_EQ(identities, moves);  // one per block entered on another stage than its input's
  absl::StatusOr<proto::Job> built = BuildGpt(config, layout);
  ASSERT_TRUE(built.ok()) << built.status();
  const std::vector<float> expected = Losses(*built, layout, schedule);
  const std::vector<float> got = Losses(staged, layout, schedule);
  ASSERT_EQ(expected.size(), 4u);
  EXPECT_EQ(got, expected);  // the same ops on the same devices: the same floats
}

TEST(BlockStages, TwoBlocksOnTwoStagesTrainAsTheBuildersPipeline) {
  ExpectTrainsAsTheBuilder(SmallGpt(2), LayoutOf(2, 2, 2), "1f1b", 1);
}

TEST(BlockStages, InterleavedChunksGoBackToTheFirstStage) {
  // 4 blocks as 4 chunks on 2 stages: 0, 1, 0, 1; three moves.
  ExpectTrainsAsTheBuilder(SmallGpt(4), LayoutOf(2, 2, 4, /*virtual_stages=*/2), "interleaved", 3);
}

TEST(BlockStages, MoreStagesThanBlocksAreRefused) {
  const ParallelLayout layout = LayoutOf(3, 3, 2);
  proto::Job job = Unstaged(SmallGpt(2), layout);
  const absl::Status status = PlaceBlocksOnStages(layout, &job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "--pp=3 needs a block per pipeline stage, and the graph has 2 block(s) (ops marked block=NAME); valid: --pp "
            "up to 2");
}

}  // namespace
}  // namespace oneflow::examples
