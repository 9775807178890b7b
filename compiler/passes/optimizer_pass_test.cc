// The optimizer pass on a small graph written as text: the state variables and update ops it adds.
#include "compiler/passes/optimizer_pass.h"

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
