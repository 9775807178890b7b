// The sbp_choice pass on a small graph written as text: the layout it chooses for each tensor and op.
#include "compiler/passes/sbp_choice_pass.h"

#include <string>

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(SbpChoicePassTest, ChoosesDataParallelOnTwoDevices) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "sbp_choice", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Before the pass nothing has an SBP.
  EXPECT_EQ(texts->before.find(" S(0)"), std::string::npos) << texts->before;
  // Inputs and variables keep their B default; ops read the batch split (S(0)) and w
  // whole (B). The mean over a split batch is a partial sum (P), as is w's gradient
  // x^T x dy over split rows; the update reads it whole (B), so boxing will all-reduce it.
  EXPECT_EQ(texts->after,
            "placement #0 cpu{0:0-1}\n"
            "input %x: f32[4, 8] B @0\n"
            "input %labels: i32[4] B @0\n"
            "variable %w: f32[8, 4] B @0\n"
            "variable %w/momentum: f32[8, 4] B @0\n"
            "%matmul_0: f32[4, 4] S(0) = matmul(a=%x:S(0), b=%w:B) @0\n"
            "%sparse_softmax_cross_entropy_1: f32[4] S(0) = sparse_softmax_cross_entropy(logits=%matmul_0:S(0), "
            "labels=%labels:S(0)) @0\n"
            "%reduce_mean_2: f32[] P = reduce_mean(x=%sparse_softmax_cross_entropy_1:S(0)) @0\n"
            "%reduce_mean_2_grad/ones_like_3: f32[] B = ones_like(x=%reduce_mean_2:P) @0\n"
            "%reduce_mean_2_grad/broadcast_like_4: f32[4] S(0) = broadcast_like(x=%reduce_mean_2_grad/ones_like_3:B, "
            "like=%sparse_softmax_cross_entropy_1:S(0)) @0\n"
            "%reduce_mean_2_grad/scalar_mul_5: f32[4] S(0) = scalar_mul(x=%reduce_mean_2_grad/broadcast_like_4:S(0)) @0\n"
            "%sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: f32[4, 4] S(0) = "
            "sparse_softmax_cross_entropy_grad(logits=%matmul_0:S(0), labels=%labels:S(0), "
            "dy=%reduce_mean_2_grad/scalar_mul_5:S(0)) @0\n"
            "%matmul_0_grad/matmul_8: f32[8, 4] P = matmul(a=%x:S(0), "
            "b=%sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6:S(0)) @0\n"
            "op w_update/sgd_update_9 = sgd_update(param=%w:B, grad=%matmul_0_grad/matmul_8:B, momentum=%w/momentum:B) @0\n");
}

// Context parallelism with data parallelism (docs/context_parallelism.md, "With dp"):
// rows [dp * s, b, h] split S(0) over dp and, nested, S(0) over cp, become [dp, s, b, h]
// split S(0) over dp and S(1) over cp. Judged on the whole tensor, reshape's 1-D
// signatures send cp's S(0) to axis 0 again; judged on the slice dp leaves
// ([s, b, h] -> [1, s, b, h]) it is S(1). The pass takes that layout without boxing, and
// the flatten back to rows likewise.
TEST(SbpChoicePassTest, ReshapeJudgesInnerAxesOnTheLocalShape) {
  constexpr char kGraph[] = R"(graph nested
placement cpu{0:0-3}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 3, 4] source=data sbp=[S(0), S(0)]
%groups = reshape(x=%x, shape=[2, 4, 3, 4]) f32[2, 4, 3, 4] sbp=[S(0), S(1)]
%rows = reshape(x=%groups, shape=[24, 4]) f32[24, 4] sbp=[S(0), S(0)]
%reduce_mean_0 = reduce_mean(x=%rows, axes=[], keep_dims=false) f32[]
loss %reduce_mean_0
)";
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(4);
  absl::StatusOr<PassTexts> texts = RunThroughPass(kGraph, "sbp_choice", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_NE(texts->after.find("%groups: f32[2, 4, 3, 4] [S(0), S(1)] = reshape(x=%x:[S(0), S(0)]) @0\n"),
            std::string::npos)
      << texts->after;
  EXPECT_NE(texts->after.find("%rows: f32[24, 4] [S(0), S(0)] = reshape(x=%groups:[S(0), S(1)]) @0\n"),
            std::string::npos)
      << texts->after;
}

}  // namespace
}  // namespace oneflow
