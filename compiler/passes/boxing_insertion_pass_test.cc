// The boxing_insertion pass on a small graph written as text: the conversions it puts
// where a producer's layout is not what a consumer reads.
#include "compiler/passes/boxing_insertion_pass.h"

#include <string>

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(BoxingInsertionPassTest, SlicesTheDataAndAllReducesThePartialSums) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "boxing_insertion", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // x and labels are whole (B) and read split (S(0)): each device keeps its half, no
  // traffic; every reader of the same layout shares one boxing. w's gradient (P) is read
  // whole by the update: a ring all_reduce, 2(n-1)/n x 128 B = 128 B on 2 devices; the
  // loss (P) goes whole to the loss sink (no op reads it through a boxing): a scalar's
  // ring chunk is one whole f32, 4 B in each of the two phases.
  EXPECT_EQ(ChangedLines(*texts),
            "- %matmul_0: f32[4, 4] S(0) = matmul(a=%x:S(0), b=%w:B) @0\n"
            "- %sparse_softmax_cross_entropy_1: f32[4] S(0) = sparse_softmax_cross_entropy(logits=%matmul_0:S(0), "
            "labels=%labels:S(0)) @0\n"
            "- %sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: f32[4, 4] S(0) = "
            "sparse_softmax_cross_entropy_grad(logits=%matmul_0:S(0), labels=%labels:S(0), "
            "dy=%reduce_mean_2_grad/scalar_mul_5:S(0)) @0\n"
            "- %matmul_0_grad/matmul_8: f32[8, 4] P = matmul(a=%x:S(0), "
            "b=%sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6:S(0)) @0\n"
            "- op w_update/sgd_update_9 = sgd_update(param=%w:B, grad=%matmul_0_grad/matmul_8:B, momentum=%w/momentum:B) @0\n"
            "+ %matmul_0: f32[4, 4] S(0) = matmul(a=%x:S(0) via boxing#0, b=%w:B) @0\n"
            "+ %sparse_softmax_cross_entropy_1: f32[4] S(0) = sparse_softmax_cross_entropy(logits=%matmul_0:S(0), "
            "labels=%labels:S(0) via boxing#1) @0\n"
            "+ %sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: f32[4, 4] S(0) = "
            "sparse_softmax_cross_entropy_grad(logits=%matmul_0:S(0), labels=%labels:S(0) via boxing#1, "
            "dy=%reduce_mean_2_grad/scalar_mul_5:S(0)) @0\n"
            "+ %matmul_0_grad/matmul_8: f32[8, 4] P = matmul(a=%x:S(0) via boxing#0, "
            "b=%sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6:S(0)) @0\n"
            "+ op w_update/sgd_update_9 = sgd_update(param=%w:B, grad=%matmul_0_grad/matmul_8:B via boxing#2, "
            "momentum=%w/momentum:B) @0\n"
            "+ boxing#0 %x B @0 -> S(0) @0: local_slice[axis 0] (0 B/device)\n"
            "+ boxing#1 %labels B @0 -> S(0) @0: local_slice[axis 0] (0 B/device)\n"
            "+ boxing#2 %matmul_0_grad/matmul_8 P @0 -> B @0: all_reduce[axis 0] (128 B/device)\n"
            "+ boxing#3 %reduce_mean_2 P @0 -> B @0: all_reduce[axis 0] (8 B/device)\n")
      << texts->after;
}

}  // namespace
}  // namespace oneflow
