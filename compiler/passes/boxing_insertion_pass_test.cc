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

// Ring attention's ring_shift split over its ring (compiler/ring_shift.h): its input is
// boxed S(0) -> S(0) into the placement rotated by one, a send/recv in which each device
// receives the 2 x 4 block of the device before it (32 B); whole (B) it would roll locally.
// Split over 2 devices while blocks=4 it is refused naming the op.
TEST(BoxingInsertionPassTest, RingShiftReadsItsInputFromTheRotatedPlacement) {
  constexpr char kRing[] = R"(graph ring
placement cpu{0:0-3}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 4] source=data sbp=S(0)
%w = variable f32[4, 4] init=xavier_uniform seed=1 sbp=B
%y = matmul(a=%x, b=%w) f32[8, 4] sbp=S(0)
%shifted = ring_shift(x=%y, axis=0, blocks=4, shift=1) f32[8, 4] sbp=S(0)
%total = reduce_mean(x=%shifted, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %total
)";
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(4);
  absl::StatusOr<PassTexts> texts = RunThroughPass(kRing, "boxing_insertion", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_NE(texts->before.find("placement #1 cpu{0:1-3, 0:0}"), std::string::npos) << texts->before;
  EXPECT_NE(texts->after.find("ring_shift(x=%y:S(0) via boxing#"), std::string::npos) << texts->after;
  EXPECT_NE(texts->after.find("%y S(0) @0 -> S(0) @1: send_recv (32 B/device)"), std::string::npos) << texts->after;
  // The gradient's shift back goes the other way round.
  EXPECT_NE(texts->before.find("placement #2 cpu{0:3, 0:0-2}"), std::string::npos) << texts->before;
}

}  // namespace
}  // namespace oneflow
