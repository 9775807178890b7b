// The dead_op_elimination pass on a small graph written as text: the ops it drops.
#include "compiler/passes/dead_op_elimination_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// x -> matmul(w1) -> relu -> matmul(w2) -> cross entropy -> mean, trained with SGD.
constexpr char kMlp[] = R"(graph mlp
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
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_4
)";

TEST(DeadOpEliminationPassTest, DropsExactlyTheGradientOfTheDataInput) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kMlp, "dead_op_elimination");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Autograd builds matmul_0's gradient for both inputs; the one for x (dy x w1^T) feeds
  // nothing: x is data, not a variable. Every other backward op leads to an update.
  EXPECT_EQ(ChangedLines(*texts),
            "- %matmul_0_grad/matmul_12: f32[4, 8] = matmul(a=%relu_1_grad/relu_grad_11, b=%w1) @0\n")
      << texts->after;
  // The gradient w1's update reads stays.
  EXPECT_NE(texts->after.find("%matmul_0_grad/matmul_13: f32[8, 8] = matmul(a=%x, b=%relu_1_grad/relu_grad_11) @0\n"),
            std::string::npos)
      << texts->after;
}

}  // namespace
}  // namespace oneflow
