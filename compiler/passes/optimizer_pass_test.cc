// The optimizer pass on a small graph written as text: the state variables and update ops it adds.
#include "compiler/passes/optimizer_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr const char* kLinear = kOneDeviceLinearGraph;

TEST(OptimizerPassTest, AddsMomentumAndAnUpdateReadingTheGradient) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "optimizer");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // SGD with momentum keeps one buffer shaped as w, and updates w from w's gradient
  // (matmul_8, x^T x dy), not from x's (matmul_7).
  EXPECT_EQ(ChangedLines(*texts),
            "+ variable %w/momentum: f32[8, 4] @0\n"
            "+ op w_update/sgd_update_9 = sgd_update(param=%w, grad=%matmul_0_grad/matmul_8, momentum=%w/momentum) @0\n")
      << texts->after;
}

}  // namespace
}  // namespace oneflow
