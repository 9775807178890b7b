// The shrink rule (shrink_rule.h) as text: for each old layout and survivor count, the
// layout a shrink re-plans for, or the refusal; and the re-cut of a recorded text to a
// smaller micro-batch, equal to the text the model writes for that micro-batch size.
#include "tools/cli/shrink_rule.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;

ShrinkInputs Inputs(int64_t batch, int64_t dp, int64_t micro_batches, int64_t survivors) {
  ShrinkInputs inputs;
  inputs.batch = batch;
  inputs.dp = dp;
  inputs.micro_batches = micro_batches;
  inputs.survivors = survivors;
  return inputs;
}

// "dp=2 nodes=2 micro_batches=2 | <action text> | <note>", or the error.
std::string Choice(const ShrinkInputs& inputs) {
  absl::StatusOr<ShrinkChoice> choice = ChooseShrinkLayout(inputs);
  if (!choice.ok()) return choice.status().ToString();
  return absl::StrCat("dp=", choice->dp, " nodes=", choice->nodes, " micro_batches=", choice->micro_batches, " | ",
                      ShrinkChoiceText(inputs, *choice), choice->note.empty() ? "" : " | ", choice->note);
}

TEST(ShrinkRuleTest, DpFollowsTheSurvivorsAndMicroBatchesKeepEachDevicesShare) {
  // elastic_shrink_test's job: 48 over dp 3 (16 rows a device); on 2 nodes 24 would not
  // fit what 16 did, so 2 micro-batches of 12.
  EXPECT_EQ(Choice(Inputs(48, 3, 1, 2)),
            "dp=2 nodes=2 micro_batches=2 | dp 3 -> 2, micro-batches 1 -> 2: global batch 48, 12 rows per device's "
            "micro-batch (was 16)");
  // Then on 1 node: 4 micro-batches of 12.
  EXPECT_EQ(Choice(Inputs(48, 2, 2, 1)),
            "dp=1 nodes=1 micro_batches=4 | dp 2 -> 1, micro-batches 2 -> 4: global batch 48, 12 rows per device's "
            "micro-batch (was 12)");
  // 4 of 6 devices (2 per node): 12 over dp 4 needs 3 micro-batches (1 row each; 2 would
  // leave 1.5 rows).
  ShrinkInputs two_per_node = Inputs(12, 6, 1, 2);
  two_per_node.devices_per_node = 2;
  EXPECT_EQ(Choice(two_per_node),
            "dp=4 nodes=2 micro_batches=3 | dp 6 -> 4, micro-batches 1 -> 3: global batch 12, 1 row per device's "
            "micro-batch (was 2)");
  // Already small enough: the micro-batches stay.
  EXPECT_EQ(Choice(Inputs(4, 3, 2, 2)),
            "dp=2 nodes=2 micro_batches=2 | dp 3 -> 2, micro-batches 2 -> 2: global batch 4, 1 row per device's "
            "micro-batch (was 1)");
}

TEST(ShrinkRuleTest, ABatchThatDoesNotDivideTakesTheLargestDpThatDoes) {
  EXPECT_EQ(Choice(Inputs(20, 4, 1, 3)),
            "dp=2 nodes=2 micro_batches=2 | dp 4 -> 2, micro-batches 1 -> 2: global batch 20, 5 rows per device's "
            "micro-batch (was 5) | the global batch of 20 does not split evenly over dp 3; dp 2 is the largest that "
            "does (1 of the 3 surviving nodes idle)");
}

TEST(ShrinkRuleTest, FixedMicroBatchesOnlyNeedAnEvenSplit) {
  ShrinkInputs fixed = Inputs(48, 3, 1, 2);
  fixed.micro_batches_fixed = true;
  EXPECT_EQ(Choice(fixed),
            "dp=2 nodes=2 micro_batches=1 | dp 3 -> 2, micro-batches 1 -> 1: global batch 48, 24 rows per device's "
            "micro-batch (was 16)");
  ShrinkInputs odd = Inputs(30, 3, 2, 2);  // 15 rows per micro-batch: dp 2 cannot split them
  odd.micro_batches_fixed = true;
  EXPECT_EQ(Choice(odd),
            "dp=1 nodes=1 micro_batches=2 | dp 3 -> 1, micro-batches 2 -> 2: global batch 30, 15 rows per device's "
            "micro-batch (was 5) | the global batch of 30 does not split evenly over dp 2 x 2 micro-batches; dp 1 is "
            "the largest that does (1 of the 2 surviving nodes idle)");
}

TEST(ShrinkRuleTest, RefusalsNameTheBatchTheSurvivorsAndTheValidCounts) {
  ShrinkInputs tensor_parallel = Inputs(21, 3, 1, 2);
  tensor_parallel.tp = 2;
  tensor_parallel.devices_per_node = 2;
  EXPECT_EQ(Choice(tensor_parallel),
            "FAILED_PRECONDITION: the global batch of 21 cannot be kept on the 2 surviving nodes x 2 devices "
            "(replicas of --tp=2 x --cp=1 x --pp=1, at most dp 2): no dp splits it evenly into micro-batches of at "
            "most 7 rows per device (the old layout's); dp 1 drops the data-parallel axis of the hierarchy the "
            "model's SBP hints were written for; dp counts up to 2 that divide the batch: 1");
  ShrinkInputs zero = Inputs(9, 3, 1, 2);
  zero.zero = 1;
  EXPECT_EQ(Choice(zero),
            "FAILED_PRECONDITION: the global batch of 9 cannot be kept on the 2 surviving nodes x 1 device (replicas "
            "of --tp=1 x --cp=1 x --pp=1, at most dp 2): no dp splits it evenly into micro-batches of at most 3 rows "
            "per device (the old layout's); --zero=1 shards over data parallelism and needs dp > 1; dp counts up to 2 "
            "that divide the batch: 1");
}

std::string MlpText(int64_t dp, int64_t micro_batches) {
  examples::ParallelFlags flags;
  flags.nodes = dp;
  flags.dp = dp;
  flags.micro_batches = micro_batches;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  examples::MlpConfig config;
  config.batch = 48;
  config.in_features = 48;  // a dimension equal to the old rows that is not the batch: kept
  config.hidden = 24;
  config.layers = 3;
  absl::StatusOr<proto::Job> job = examples::BuildMlp(config, *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(*job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return (*graph)->ToText(Graph::Locations::kOmit);
}

TEST(ShrinkRuleTest, RecutTextIsTheModelsTextForTheNewMicroBatch) {
  const std::string one = MlpText(2, 1);
  ASSERT_THAT(one, HasSubstr("= input f32[48, 48]"));
  EXPECT_EQ(RecutMicroBatches(one, 48, 1, 2).value_or("refused"), MlpText(2, 2));
  EXPECT_EQ(RecutMicroBatches(one, 48, 1, 4).value_or("refused"), MlpText(2, 4));
  EXPECT_EQ(RecutMicroBatches(MlpText(2, 4), 48, 4, 2).value_or("refused"), MlpText(2, 2));  // and back
}

// The gpt's reshapes hold the batch in their target shapes ([B * seq, hidden], [B, seq,
// heads, head_dim]): the re-cut gives them too, as the model writes them.
std::string GptText(int64_t micro_batches) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.hidden = 16;
  config.heads = 2;
  config.vocab = 32;
  config.layers = 1;
  examples::ParallelFlags flags;
  flags.micro_batches = micro_batches;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *examples::ParallelLayout::Create(flags));
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(*job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return (*graph)->ToText(Graph::Locations::kPrint);
}

TEST(ShrinkRuleTest, ATextWhoseReshapesHoldTheBatchIsRecutWithThem) {
  const std::string whole = GptText(1);
  ASSERT_THAT(whole, HasSubstr("shape=[32, 16]"));  // 4 rows x 8 positions
  ASSERT_THAT(whole, HasSubstr(" loc=\""));
  EXPECT_EQ(RecutMicroBatches(whole, 4, 1, 2).value_or("refused"), GptText(2));
  EXPECT_EQ(RecutMicroBatches(GptText(2), 4, 2, 4).value_or("refused"), GptText(4));
  EXPECT_EQ(RecutMicroBatches(GptText(2), 4, 2, 1).value_or("refused"), whole);
  // Micro-batches of 1 row: a size-1 axis also broadcasts, so the rows cannot be told.
  EXPECT_EQ(RecutMicroBatches(GptText(4), 4, 4, 2).status().message(),
            "the graph is one of 4 micro-batches of 1 row, whose ops cannot show which tensors carry the batch (an "
            "axis of 1 also broadcasts); valid: micro-batches of 2 rows or more");
}

TEST(ShrinkRuleTest, ATextWhoseOpsMixRowsIsRefusedNamingTheOp) {
  // A sum over the batch for the loss: the micro-batches' mean is not the batch's sum.
  const std::string text =
      "graph r\nbatch 8\nsource data synthetic_classification seed=1 num_classes=4\n"
      "%x = input f32[4, 4] source=data\n%labels = input i32[4] source=data\n"
      "%w = variable f32[4, 4] init=zeros\n%y = matmul(a=%x, b=%w) f32[4, 4]\n"
      "%l = reduce_sum(x=%y, axes=[], keep_dims=false) f32[]\nloss %l\noptimizer sgd lr=0.1\n";
  const absl::StatusOr<std::string> recut = RecutMicroBatches(text, 8, 2, 4);
  EXPECT_EQ(recut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(recut.status().message()), HasSubstr("op 'l' (reduce_sum, <text>:8) reads the batch's rows"));
}

}  // namespace
}  // namespace oneflow::cli
