// The activation_storage pass on a small graph written as text: what it adds and
// rewires under bf16 (the state before and after, line by line), that fp32 changes
// nothing, and the plan's registers of the stored activations (bf16, 2 bytes an element).
#include "compiler/passes/activation_storage_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "plan/plan_verifier.h"

namespace oneflow {
namespace {

CompileOptions Options(Precision precision) {
  CompileOptions options = TwoDeviceOptions();
  options.precision = precision;
  return options;
}

TEST(ActivationStoragePassTest, Fp32ChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceTwoLayerGraph, "activation_storage", Options(Precision::kFp32));
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(texts->before, texts->after);
}

// relu_2 (read by matmul_3's two gradient products and relu's gradient), matmul_3 (the
// logits, read by the loss's gradient) and sparse_softmax_cross_entropy_4 (the shape
// source of broadcast_like) are kept in bf16: each narrowed after its last forward reader
// and widened before its first backward reader, which with the later backward readers
// now reads the widened copy. x (an input), the weights and the loss are not activations.
TEST(ActivationStoragePassTest, Bf16StoresWhatBackwardReads) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceTwoLayerGraph, "activation_storage", Options(Precision::kBf16));
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts),
            "- %reduce_mean_5_grad/broadcast_like_7: f32[4] S(0) = broadcast_like(x=%reduce_mean_5_grad/ones_like_6:B, like=%sparse_softmax_cross_entropy_4:S(0)) @0\n"
            "- %sparse_softmax_cross_entropy_4_grad/sparse_softmax_cross_entropy_grad_9: f32[4, 4] S(0) = sparse_softmax_cross_entropy_grad(logits=%matmul_3:S(0), labels=%labels:S(0), dy=%reduce_mean_5_grad/scalar_mul_8:S(0)) @0\n"
            "- %matmul_3_grad/matmul_11: f32[8, 4] P = matmul(a=%relu_2:S(0), b=%sparse_softmax_cross_entropy_4_grad/sparse_softmax_cross_entropy_grad_9:S(0)) compute=bf16 @0\n"
            "- %relu_2_grad/relu_grad_12: f32[4, 8] S(0) = relu_grad(dy=%matmul_3_grad/matmul_10:S(0), y=%relu_2:S(0)) @0\n"
            "+ %relu_2/bf16: bf16[4, 8] S(0) = cast(x=%relu_2:S(0)) @0\n"
            "+ %matmul_3/bf16: bf16[4, 4] S(0) = cast(x=%matmul_3:S(0)) @0\n"
            "+ %sparse_softmax_cross_entropy_4/bf16: bf16[4] S(0) = cast(x=%sparse_softmax_cross_entropy_4:S(0)) @0\n"
            "+ %sparse_softmax_cross_entropy_4/f32: f32[4] S(0) = cast(x=%sparse_softmax_cross_entropy_4/bf16:S(0)) @0\n"
            "+ %reduce_mean_5_grad/broadcast_like_7: f32[4] S(0) = broadcast_like(x=%reduce_mean_5_grad/ones_like_6:B, like=%sparse_softmax_cross_entropy_4/f32:S(0)) @0\n"
            "+ %matmul_3/f32: f32[4, 4] S(0) = cast(x=%matmul_3/bf16:S(0)) @0\n"
            "+ %sparse_softmax_cross_entropy_4_grad/sparse_softmax_cross_entropy_grad_9: f32[4, 4] S(0) = sparse_softmax_cross_entropy_grad(logits=%matmul_3/f32:S(0), labels=%labels:S(0), dy=%reduce_mean_5_grad/scalar_mul_8:S(0)) @0\n"
            "+ %relu_2/f32: f32[4, 8] S(0) = cast(x=%relu_2/bf16:S(0)) @0\n"
            "+ %matmul_3_grad/matmul_11: f32[8, 4] P = matmul(a=%relu_2/f32:S(0), b=%sparse_softmax_cross_entropy_4_grad/sparse_softmax_cross_entropy_grad_9:S(0)) compute=bf16 @0\n"
            "+ %relu_2_grad/relu_grad_12: f32[4, 8] S(0) = relu_grad(dy=%matmul_3_grad/matmul_10:S(0), y=%relu_2/f32:S(0)) @0\n")
      << texts->after;
}

// The compiled plan: the stored activations' registers are bf16, sized 2 bytes an
// element, which the verifier checks (a bf16 register sized as f32 is refused).
TEST(ActivationStoragePassTest, Bf16RegistersAreSizedByTheirDtype) {
  absl::StatusOr<proto::Job> job = JobFromText(kTwoDeviceTwoLayerGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, Options(Precision::kBf16));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyPlanStructure(*plan).ok());
  int bf16_registers = 0;
  for (const proto::RegisterDef& reg : plan->devices(0).registers()) {
    if (reg.dtype() != proto::DTYPE_BF16) continue;
    ++bf16_registers;
    int64_t elements = 1;
    for (int64_t dim : reg.shape()) elements *= dim;
    EXPECT_EQ(reg.size_bytes(), 2 * elements) << reg.tensor();
  }
  // relu_2/bf16 [2, 8], matmul_3/bf16 [2, 4] and sparse_softmax_cross_entropy_4/bf16 [2]
  // on each of the two devices.
  EXPECT_EQ(bf16_registers, 3);
  for (proto::RegisterDef& reg : *plan->mutable_devices(0)->mutable_registers()) {
    if (reg.tensor() != "relu_2/bf16") continue;
    EXPECT_EQ(reg.size_bytes(), 32);
    reg.set_size_bytes(64);
    const absl::Status status = VerifyPlanStructure(*plan);
    EXPECT_NE(std::string(status.message()).find("('relu_2/bf16') has size 64 bytes, but its shape and dtype need 32"),
              std::string::npos)
        << status;
  }
}

}  // namespace
}  // namespace oneflow
