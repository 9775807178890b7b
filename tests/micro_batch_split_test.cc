// SplitIntoMicroBatches: the gpt of the whole batch cut into micro-batches is the graph the
// gpt builder makes for them, trains as it does, and graphs whose micro-batches would not
// add up to the batch are refused naming the op.
#include "examples/common/micro_batch_split.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/plan_losses.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow::examples {
namespace {

ParallelLayout OneDevice(int64_t micro_batches) {
  ParallelFlags flags;
  flags.micro_batches = micro_batches;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

GptConfig SmallGpt() {
  GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  return config;
}

proto::Job Built(const GptConfig& config, int64_t micro_batches) {
  absl::StatusOr<proto::Job> job = BuildGpt(config, OneDevice(micro_batches));
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

std::vector<float> Losses(const proto::Job& job, int64_t iterations) {
  CompileOptions options;
  options.cluster = OneDevice(1).cluster();
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? testing::TrainedLosses(*plan, iterations) : std::vector<float>();
}

TEST(MicroBatchSplit, TheWholeBatchGptCutInFourIsTheGraphTheBuilderMakesForFour) {
  const proto::Job whole = Built(SmallGpt(), 1);
  ASSERT_TRUE(HoldsWholeBatch(whole));
  EXPECT_EQ(BatchRows(whole), 8);
  absl::StatusOr<proto::Job> split = SplitIntoMicroBatches(whole, 4);
  ASSERT_TRUE(split.ok()) << split.status();
  const proto::Job built = Built(SmallGpt(), 4);
  EXPECT_FALSE(HoldsWholeBatch(built));
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  // Inputs [2, 16], the projections' reshapes to [32, 32] and [2, 16, 2, 16], the loss's
  // targets [32]: every shape and attribute as the builder writes them for 2 rows.
  EXPECT_TRUE(differencer.Compare(built, *split)) << difference;
}

TEST(MicroBatchSplit, TheCutGraphTrainsAsTheWholeBatch) {
  const proto::Job whole = Built(SmallGpt(), 1);
  absl::StatusOr<proto::Job> split = SplitIntoMicroBatches(whole, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  const std::vector<float> reference = Losses(whole, 4);
  ASSERT_EQ(reference.size(), 4u);
  // The mean of two micro-batches' means and gradients: the batch's, up to float sums.
  testing::ExpectLossesNear(Losses(*split, 4), reference, 1e-4, "2 micro-batches");
}

proto::Job JobOfText(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

// A regression on 8 rows whose loss is LOSS (the ops between the prediction %y and it).
std::string Regression(const std::string& loss_lines) {
  return absl::StrCat(
      "graph r\nbatch 8\nsource data synthetic_classification seed=1 num_classes=4\n"
      "%x = input f32[8, 4] source=data\n%labels = input i32[8] source=data\n"
      "%w = variable f32[4, 4] init=zeros\n%y = matmul(a=%x, b=%w) f32[8, 4]\n",
      loss_lines, "optimizer sgd lr=0.1\n");
}

TEST(MicroBatchSplit, ARowWiseGraphWithAMeanLossIsCut) {
  const proto::Job job = JobOfText(Regression(
      "%t = reshape(x=%y, shape=[32]) f32[32]\n%l = reduce_mean(x=%t, axes=[], keep_dims=false) f32[]\n"
      "%s = scalar_mul(x=%l, scalar=2.0) f32[]\nloss %s\n"));
  absl::StatusOr<proto::Job> split = SplitIntoMicroBatches(job, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->micro_batches(), 2);
  for (const proto::OpDef& op : split->ops()) {
    if (op.name() == "t") EXPECT_EQ(op.attrs().at("shape").ints().values(0), 16);  // the reshape's target, cut
  }
  for (const proto::TensorDef& tensor : split->tensors()) {
    if (tensor.name() == "x") EXPECT_EQ(tensor.shape(0), 4);
    if (tensor.name() == "t") EXPECT_EQ(tensor.shape(0), 16);  // 4 values of each of 4 samples
    if (tensor.name() == "w") EXPECT_EQ(tensor.shape(0), 4);
  }
}

TEST(MicroBatchSplit, GraphsWhoseMicroBatchesDoNotMakeTheBatchAreRefusedNamingTheOp) {
  struct Case {
    std::string loss_lines;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"%l = reduce_sum(x=%y, axes=[], keep_dims=false) f32[]\nloss %l\n",
       "op 'l' (reduce_sum, <text>:8) reads the batch's rows in 'y', and none of its signatures keeps them split on axis "
       "0 over 2 parts (S(0) in, S(0) out): its results over micro-batches do not make its result over the batch; "
       "valid: ops that treat rows independently, up to a mean over the rows for the loss"},
      {"%t = transpose(x=%y, perm=[1, 0]) f32[4, 8]\n%l = reduce_mean(x=%t, axes=[], keep_dims=false) f32[]\nloss %l\n",
       "op 't' (transpose, <text>:8) reads the batch's rows in 'y', and none of its signatures keeps them split on axis "
       "0 over 2 parts (S(0) in, S(0) out): its results over micro-batches do not make its result over the batch; "
       "valid: ops that treat rows independently, up to a mean over the rows for the loss"},
      {"%m = reduce_mean(x=%y, axes=[], keep_dims=false) f32[]\n%l = mul(x=%m, y=%m) f32[]\nloss %l\n",
       "op 'l' (mul, <text>:9) reads a mean over the batch, and the mean of its results over micro-batches is not its "
       "result over the batch; a graph split into micro-batches may take a mean over the rows only into the loss, "
       "through add, identity, reshape, scalar_add, scalar_mul, sub"},
      {"%l = reduce_mean(x=%w, axes=[], keep_dims=false) f32[]\nloss %l\n",
       "the loss 'l' does not depend on the batch; micro-batches average their losses and gradients, which gives the "
       "batch's only for a mean over its rows"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<proto::Job> split = SplitIntoMicroBatches(JobOfText(Regression(c.loss_lines)), 2);
    EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument) << c.loss_lines;
    EXPECT_EQ(std::string(split.status().message()), c.error);
  }
  absl::StatusOr<proto::Job> uneven = SplitIntoMicroBatches(
      JobOfText(Regression("%l = reduce_mean(x=%y, axes=[], keep_dims=false) f32[]\nloss %l\n")), 3);
  EXPECT_EQ(std::string(uneven.status().message()),
            "the batch of 8 rows does not split into --micro_batches=3; valid: a count that divides 8");
}

}  // namespace
}  // namespace oneflow::examples
