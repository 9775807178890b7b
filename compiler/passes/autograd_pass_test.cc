// The autograd pass on a small graph written as text: the backward ops it adds.
#include "compiler/passes/autograd_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr const char* kLinear = kOneDeviceLinearGraph;

TEST(AutogradPassTest, AddsTheGradientOfEveryOpFromTheLossBack) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "autograd");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // d loss / d loss = 1, spread over the 4 rows and scaled by 1/4 (the mean); cross
  // entropy's gradient from its logits; then matmul's for both inputs: dy x w^T for x
  // (f32[4, 8]) and x^T x dy for w (f32[8, 4]). Forward ops are unchanged.
  EXPECT_EQ(ChangedLines(*texts),
            "+ %reduce_mean_2_grad/ones_like_3: f32[] = ones_like(x=%reduce_mean_2) @0\n"
            "+ %reduce_mean_2_grad/broadcast_like_4: f32[4] = broadcast_like(x=%reduce_mean_2_grad/ones_like_3, "
            "like=%sparse_softmax_cross_entropy_1) @0\n"
            "+ %reduce_mean_2_grad/scalar_mul_5: f32[4] = scalar_mul(x=%reduce_mean_2_grad/broadcast_like_4) @0\n"
            "+ %sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: f32[4, 4] = "
            "sparse_softmax_cross_entropy_grad(logits=%matmul_0, labels=%labels, dy=%reduce_mean_2_grad/scalar_mul_5) @0\n"
            "+ %matmul_0_grad/matmul_7: f32[4, 8] = matmul(a=%sparse_softmax_cross_entropy_1_grad/"
            "sparse_softmax_cross_entropy_grad_6, b=%w) @0\n"
            "+ %matmul_0_grad/matmul_8: f32[8, 4] = matmul(a=%x, b=%sparse_softmax_cross_entropy_1_grad/"
            "sparse_softmax_cross_entropy_grad_6) @0\n")
      << texts->after;
}

}  // namespace
}  // namespace oneflow
