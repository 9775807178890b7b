// The gradient_accumulation pass on a small graph written as text: the accumulate op it
// puts between a gradient and the optimizer.
#include "compiler/passes/gradient_accumulation_pass.h"

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

TEST(GradientAccumulationPassTest, WithoutMicroBatchesChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
