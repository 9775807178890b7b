// FindCpuKernel's answers, the errors kernels return for bad arguments and bad data (each
// names the kernel, the value and what would be valid), and in-place updates on
// hand-computed values.
#include <cmath>

#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"
#include "oneflow_core/ops/reference/reference.h"

namespace oneflow {
namespace {

Dense Values(Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  return Dense{std::move(shape), std::move(values), dtype};
}

KernelArgument Argument(void* data, Shape shape, DType dtype = DType::kF32) {
  return {data, dtype, shape, {shape, TensorSlice::Whole(shape)}};
}

void ExpectInvalid(const absl::Status& status, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(status.message(), message);
}

TEST(CpuKernelErrorsTest, FindCpuKernelListsTheKnownNames) {
  EXPECT_TRUE(FindCpuKernel("layer_norm_grad").ok());
  const absl::StatusOr<KernelFunction> missing = FindCpuKernel("conv2d");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message().substr(0, 70),
            "no CPU kernel named 'conv2d'; known: matmul, fused_matmul_bias, add, s");
  EXPECT_NE(missing.status().message().find("sgd_update, adamw_update"), std::string::npos);
}

TEST(CpuKernelErrorsTest, IdsAndLabelsOutOfRangeNameTheKernelValueAndRange) {
  const Dense table = Values({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  ExpectInvalid(
      RunCpuKernel("embedding", {table, Values({3}, {0, 7, 1}, DType::kI32)}, {}).status(),
      "kernel 'embedding': id 7 at index 1 is out of range; valid: 0..3");
  ExpectInvalid(RunCpuKernel("embedding", {table, Values({2}, {-1, 0}, DType::kI64)}, {}).status(),
                "kernel 'embedding': id -1 at index 0 is out of range; valid: 0..3");
  ExpectInvalid(
      RunCpuKernel("embedding_grad", {Values({2}, {2, 5}, DType::kI32), Values({2, 1}, {1, 1})},
                   {{"vocab", int64_t{5}}})
          .status(),
      "kernel 'embedding_grad': id 5 at index 1 is out of range; valid: 0..4");
  const Dense logits = Values({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectInvalid(
      RunCpuKernel("sparse_softmax_cross_entropy", {logits, Values({2}, {0, 3}, DType::kI64)}, {})
          .status(),
      "kernel 'sparse_softmax_cross_entropy': label 3 at index 1 is out of range; "
      "valid: 0..2");
  ExpectInvalid(RunCpuKernel("sparse_softmax_cross_entropy_grad",
                             {logits, Values({2}, {-2, 0}, DType::kI32), Values({2}, {1, 1})}, {})
                    .status(),
                "kernel 'sparse_softmax_cross_entropy_grad': label -2 at index 0 is out of "
                "range; valid: 0..2");
}

// Arguments the runtime got wrong: the kernel refuses them before touching memory.
TEST(CpuKernelErrorsTest, BadArgumentsAreRefusedWithWhatWouldBeValid) {
  float a[6] = {}, b[6] = {}, out[6] = {};
  KernelContext context;
  context.inputs = {Argument(a, Shape{2, 3})};
  context.outputs = {Argument(out, Shape{2, 2})};
  ExpectInvalid((*FindCpuKernel("matmul"))(context),
                "kernel 'matmul': takes inputs (a, b) and outputs (out), got 1 inputs and 1 "
                "outputs");
  context.inputs.push_back(Argument(b, Shape{2, 3}));
  ExpectInvalid((*FindCpuKernel("matmul"))(context),
                "kernel 'matmul': inner dimensions differ: a [2, 3] (transpose_a=false) has "
                "k=3, b [2, 3] (transpose_b=false) has k=2");
  const AttrMap transpose_b = {{"transpose_b", true}};
  context.attrs = &transpose_b;
  EXPECT_TRUE((*FindCpuKernel("matmul"))(context).ok());  // [2, 3] x [2, 3]^T is valid.
}

// fused_matmul_bias shares matmul's checks (under its own name) and checks its bias.
TEST(CpuKernelErrorsTest, FusedMatMulBiasRefusesABiasThatIsNotTheLastDimension) {
  float a[6] = {}, b[6] = {}, bias[3] = {}, out[6] = {};
  const KernelFunction fused = *FindCpuKernel("fused_matmul_bias");
  KernelContext context;
  context.inputs = {Argument(a, Shape{2, 3}), Argument(b, Shape{2, 3}), Argument(bias, Shape{3})};
  context.outputs = {Argument(out, Shape{2, 2})};
  ExpectInvalid(fused(context),
                "kernel 'fused_matmul_bias': inner dimensions differ: a [2, 3] "
                "(transpose_a=false) has k=3, b [2, 3] (transpose_b=false) has k=2");
  const AttrMap transpose_b = {{"transpose_b", true}, {"relu", true}};
  context.attrs = &transpose_b;
  ExpectInvalid(fused(context),
                "kernel 'fused_matmul_bias': 'bias' has shape [3] but must be [2] (the "
                "product's last dimension)");
  context.inputs[2] = Argument(bias, Shape{2});
  EXPECT_TRUE(fused(context).ok());
  context.inputs.pop_back();
  ExpectInvalid(fused(context),
                "kernel 'fused_matmul_bias': takes inputs (a, b, bias) and outputs (out), got 2 "
                "inputs and 1 outputs");
}

TEST(CpuKernelErrorsTest, DTypeShapeAndLayoutMismatches) {
  float x[14] = {}, bias[5] = {}, out[14] = {};
  KernelContext relu;
  relu.inputs = {Argument(x, Shape{3}, DType::kI32)};
  relu.outputs = {Argument(out, Shape{3})};
  ExpectInvalid((*FindCpuKernel("relu"))(relu), "kernel 'relu': input 'x' must be f32, got i32[3]");
  int32_t ids[14] = {};
  KernelContext concat;
  concat.attrs = nullptr;  // axis 0
  concat.inputs = {Argument(ids, Shape{1, 7}, DType::kI32), Argument(x, Shape{1, 7})};
  concat.outputs = {Argument(out, Shape{2, 7})};
  ExpectInvalid((*FindCpuKernel("concat"))(concat),
                "kernel 'concat': input 'b' is f32[1, 7] but must have the dtype of the other "
                "arguments, i32");
  KernelContext bias_add;
  bias_add.inputs = {Argument(x, Shape{2, 7}), Argument(bias, Shape{5})};
  bias_add.outputs = {Argument(out, Shape{2, 7})};
  ExpectInvalid((*FindCpuKernel("bias_add"))(bias_add),
                "kernel 'bias_add': 'bias' has shape [5] but must be [7] (the last dimension "
                "of x)");
  KernelContext dropout;
  dropout.inputs = {Argument(x, Shape{2, 7})};
  dropout.inputs[0].layout = {Shape{4, 7}, TensorSlice({{2, 3}, {0, 7}})};
  dropout.outputs = {Argument(out, Shape{2, 7})};
  ExpectInvalid((*FindCpuKernel("dropout"))(dropout),
                "kernel 'dropout': 'x' of shape [2, 7] has layout slice [2:3, 0:7] of logical "
                "shape [4, 7]; the slice must lie inside the logical shape and have the "
                "argument's shape");
}

// The op's inference checks the schedule when the graph is built; the kernel checks it
// again because it is the one computing the rate.
TEST(CpuKernelErrorsTest, UpdatesCheckTheirSchedule) {
  float p[2] = {1, 1};
  const AttrMap attrs = {{"lr_schedule", std::string("step")}, {"base_lr", 0.1}};
  KernelContext context;
  context.attrs = &attrs;
  context.inputs = {Argument(p, Shape{2}), Argument(p, Shape{2}), Argument(p, Shape{2})};
  ExpectInvalid((*FindCpuKernel("sgd_update"))(context),
                "kernel 'sgd_update': attribute lr_schedule=\"step\" is unknown; valid: "
                "\"constant\", \"warmup_cosine\"");
}

// sgd_update and adamw_update write param and state in place and have no outputs.
TEST(CpuKernelUpdateTest, UpdatesWriteTheirInputsInPlace) {
  float param[2] = {1.0f, -2.0f}, grad[2] = {0.5f, 1.0f}, momentum[2] = {0.2f, 0.0f};
  const AttrMap sgd = {
      {"momentum", 0.9}, {"lr_schedule", std::string("constant")}, {"base_lr", 0.1}};
  KernelContext context;
  context.attrs = &sgd;
  context.inputs = {Argument(param, Shape{2}), Argument(grad, Shape{2}),
                    Argument(momentum, Shape{2})};
  ASSERT_TRUE((*FindCpuKernel("sgd_update"))(context).ok());
  EXPECT_FLOAT_EQ(momentum[0], 0.9f * 0.2f + 0.5f);
  EXPECT_FLOAT_EQ(param[0], 1.0f - 0.1f * 0.68f);
  EXPECT_FLOAT_EQ(param[1], -2.1f);
  EXPECT_FLOAT_EQ(grad[0], 0.5f);  // Read only.

  // AdamW's first step (t = 1): m_hat = g, v_hat = g^2, so the step is lr * sign(g).
  float w[1] = {3.0f}, g[1] = {-4.0f}, m[1] = {0.0f}, v[1] = {0.0f};
  const AttrMap adamw = {{"lr_schedule", std::string("constant")},
                         {"base_lr", 0.01},
                         {"weight_decay", 0.5},
                         {"epsilon", 1e-8}};
  context.attrs = &adamw;
  context.step = 0;
  context.inputs = {Argument(w, Shape{1}), Argument(g, Shape{1}), Argument(m, Shape{1}),
                    Argument(v, Shape{1})};
  ASSERT_TRUE((*FindCpuKernel("adamw_update"))(context).ok());
  EXPECT_NEAR(w[0], 3.0 * (1 - 0.01 * 0.5) + 0.01, 1e-6);
  EXPECT_FLOAT_EQ(m[0], 0.1f * -4.0f);
  EXPECT_FLOAT_EQ(v[0], 0.001f * 16.0f);
}

// variance_frozen_from = F (1-bit Adam's frozen variance): before step F v moves as
// always; from F on v keeps its bits and is bias-corrected as at t = F, m moves on.
TEST(CpuKernelUpdateTest, AdamWFrozenVarianceKeepsVAndItsCorrectionFromTheFreeze) {
  const AttrMap adamw = {{"lr_schedule", std::string("constant")}, {"base_lr", 0.01},
                         {"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8},
                         {"variance_frozen_from", int64_t{2}}};
  float w[1] = {3.0f}, g[1] = {-4.0f}, m[1] = {0.5f}, v[1] = {0.04f};
  KernelContext context;
  context.attrs = &adamw;
  context.inputs = {Argument(w, Shape{1}), Argument(g, Shape{1}), Argument(m, Shape{1}),
                    Argument(v, Shape{1})};
  context.step = 1;  // Before the freeze: v = 0.999 v + 0.001 g^2.
  ASSERT_TRUE((*FindCpuKernel("adamw_update"))(context).ok());
  EXPECT_FLOAT_EQ(v[0], 0.999f * 0.04f + 0.001f * 16.0f);

  w[0] = 3.0f, m[0] = 0.5f, v[0] = 0.04f;
  context.step = 5;  // Frozen: t = 6 for m, t = F = 2 for v.
  ASSERT_TRUE((*FindCpuKernel("adamw_update"))(context).ok());
  EXPECT_EQ(v[0], 0.04f);
  EXPECT_FLOAT_EQ(m[0], 0.9f * 0.5f + 0.1f * -4.0f);
  const double m_hat = 0.05 / (1 - std::pow(0.9, 6));
  const double v_hat = 0.04 / (1 - 0.999 * 0.999);
  EXPECT_NEAR(w[0], 3.0 - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-6);
  EXPECT_NEAR(w[0], 2.99976145, 1e-6);  // Worked by hand: 0.01 * 0.106710 / 4.47325.

  const AttrMap negative = {{"lr_schedule", std::string("constant")}, {"base_lr", 0.01},
                            {"variance_frozen_from", int64_t{-1}}};
  context.attrs = &negative;
  const absl::Status refused = (*FindCpuKernel("adamw_update"))(context);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("variance_frozen_from=-1 must be >= 0"), std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace oneflow
