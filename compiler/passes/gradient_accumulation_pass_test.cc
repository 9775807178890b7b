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

// Two layers (kOneDeviceTwoLayerGraph): backward produces the classifier's weight gradient
// (w2) first, then the first layer's bias (b1) and weight (w1) gradients, and the
// accumulate ops follow that order, so gradient_bucketing (which orders a bucket group by
// the op that makes each member ready) fills the first bucket with the gradients backward
// produces first. In variable order w1's would come first and the first bucket would wait
// for the end of the last micro-batch's backward.
TEST(GradientAccumulationPassTest, AccumulatesInTheOrderBackwardProducesTheGradients) {
  absl::StatusOr<proto::Job> job = JobFromText(kOneDeviceTwoLayerGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  const std::string changed = ChangedLines(*texts);
  const size_t w2 = changed.find("%w2_accumulate");
  const size_t b1 = changed.find("%b1_accumulate");
  const size_t w1 = changed.find("%w1_accumulate");
  ASSERT_NE(w2, std::string::npos) << changed;
  ASSERT_NE(b1, std::string::npos) << changed;
  ASSERT_NE(w1, std::string::npos) << changed;
  EXPECT_LT(w2, b1) << "backward produces w2's gradient before b1's:\n" << texts->after;
  EXPECT_LT(b1, w1) << "backward produces b1's gradient before w1's:\n" << texts->after;
}

TEST(GradientAccumulationPassTest, WithoutMicroBatchesChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
