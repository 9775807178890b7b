// The gradient_accumulation pass on a small graph written as text: the accumulate op it
// puts between a gradient and the optimizer.
#include "compiler/passes/gradient_accumulation_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// One linear layer, cross entropy and its mean, trained with SGD with momentum.
constexpr char kLinear[] = R"(graph linear
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w = variable f32[8, 4] init=xavier_uniform seed=1
%matmul_0 = matmul(a=%x, b=%w) f32[4, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[4]
%reduce_mean_2 = reduce_mean(x=%sparse_softmax_cross_entropy_1, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.9
loss %reduce_mean_2
)";

TEST(GradientAccumulationPassTest, AccumulatesEachVariablesGradientOverMicroBatches) {
  absl::StatusOr<proto::Job> job = JobFromText(kLinear);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // w's gradient (matmul_8) gets an accumulate op, which the optimizer pass then reads;
  // x's gradient (matmul_7, not a variable's) does not.
  EXPECT_EQ(ChangedLines(*texts), "+ %w_accumulate: f32[8, 4] = accumulate(x=%matmul_0_grad/matmul_8) @0\n")
      << texts->after;
}

TEST(GradientAccumulationPassTest, WithoutMicroBatchesChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
