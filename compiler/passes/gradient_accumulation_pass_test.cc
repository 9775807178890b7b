// The gradient_accumulation pass on a small graph written as text: the accumulate op it
// puts between a gradient and the optimizer.
#include "compiler/passes/gradient_accumulation_pass.h"

#include <string>

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr const char* kLinear = kOneDeviceLinearGraph;

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

// Two layers: backward produces the second layer's weight gradient (w2) before the
// first's (w1), and the accumulate ops follow that order, so gradient_bucketing (which
// orders a bucket group by the op that makes each member ready) fills the first bucket
// with the gradients backward produces first. In variable order w1's would come first and
// the first bucket would wait for the end of the last micro-batch's backward.
TEST(GradientAccumulationPassTest, AccumulatesInTheOrderBackwardProducesTheGradients) {
  absl::StatusOr<proto::Job> job = JobFromText(R"(graph two_layers
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w1 = variable f32[8, 8] init=xavier_uniform seed=1
%w2 = variable f32[8, 4] init=xavier_uniform seed=2
%matmul_0 = matmul(a=%x, b=%w1) f32[4, 8]
%relu_1 = relu(x=%matmul_0) f32[4, 8]
%matmul_2 = matmul(a=%relu_1, b=%w2) f32[4, 4]
%sparse_softmax_cross_entropy_3 = sparse_softmax_cross_entropy(logits=%matmul_2, labels=%labels) f32[4]
%reduce_mean_4 = reduce_mean(x=%sparse_softmax_cross_entropy_3, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.9
loss %reduce_mean_4
)");
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  const std::string changed = ChangedLines(*texts);
  const size_t w1 = changed.find("%w1_accumulate");
  const size_t w2 = changed.find("%w2_accumulate");
  ASSERT_NE(w1, std::string::npos) << changed;
  ASSERT_NE(w2, std::string::npos) << changed;
  EXPECT_LT(w2, w1) << "w2's gradient is produced first in backward, so its accumulate op comes first:\n"
                    << texts->after;
}

TEST(GradientAccumulationPassTest, WithoutMicroBatchesChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
