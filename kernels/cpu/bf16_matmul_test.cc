// The matmul kernels with compute_dtype="bf16" (--precision=bf16): each output equals the
// double-precision product of the bf16-rounded operands (fp32 accumulation: within
// 1e-5 of the sum of |terms|), in every transpose form, batched, and with
// fused_matmul_bias's bias and relu; it differs from the fp32 product (the rounding is
// real); an unknown compute_dtype is an error naming it.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/kernel.h"
#include "oneflow_core/dtype.h"

namespace oneflow {
namespace {

KernelArgument Argument(std::vector<float>* data, const Shape& shape) {
  return {data->data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
}

struct Case {
  bool ta, tb;
  int64_t batch, m, n, k;
  bool bias, relu;
};

float Bf16(float value) { return ToFloat(ToBFloat16(value)); }

void ExpectBf16Product(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "ta=" << c.ta << " tb=" << c.tb << " batch=" << c.batch << " m=" << c.m
                                    << " n=" << c.n << " k=" << c.k << " bias=" << c.bias << " relu=" << c.relu);
  auto dims = [&](int64_t rows, int64_t cols) {
    return c.batch > 1 ? Shape{c.batch, rows, cols} : Shape{rows, cols};
  };
  const Shape a_shape = c.ta ? dims(c.k, c.m) : dims(c.m, c.k);
  const Shape b_shape = c.tb ? dims(c.n, c.k) : dims(c.k, c.n);
  const Shape out_shape = dims(c.m, c.n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(a_shape.NumElements()), b(b_shape.NumElements()), bias(c.n), out(out_shape.NumElements()),
      out_fp32(out_shape.NumElements());
  for (float& v : a) v = uniform(rng);
  for (float& v : b) v = uniform(rng);
  for (float& v : bias) v = uniform(rng);
  const bool fused = c.bias || c.relu;
  AttrMap attrs = {{"transpose_a", c.ta}, {"transpose_b", c.tb}, {"compute_dtype", std::string("bf16")}};
  if (fused) attrs["relu"] = c.relu;
  absl::StatusOr<KernelFunction> kernel = FindCpuKernel(fused ? "fused_matmul_bias" : "matmul");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  KernelContext context;
  context.attrs = &attrs;
  context.inputs = {Argument(&a, a_shape), Argument(&b, b_shape)};
  if (fused) context.inputs.push_back(Argument(&bias, Shape{c.n}));
  context.outputs = {Argument(&out, out_shape)};
  ASSERT_TRUE((*kernel)(context).ok());
  AttrMap fp32_attrs = attrs;
  fp32_attrs.erase("compute_dtype");
  KernelContext fp32_context = context;
  fp32_context.attrs = &fp32_attrs;
  fp32_context.outputs = {Argument(&out_fp32, out_shape)};
  ASSERT_TRUE((*kernel)(fp32_context).ok());

  double largest_difference_from_fp32 = 0;
  for (int64_t batch = 0; batch < c.batch; ++batch) {
    const float* ab = a.data() + batch * c.m * c.k;
    const float* bb = b.data() + batch * c.k * c.n;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double term = static_cast<double>(Bf16(c.ta ? ab[p * c.m + i] : ab[i * c.k + p])) *
                              Bf16(c.tb ? bb[j * c.k + p] : bb[p * c.n + j]);
          sum += term;
          magnitude += std::abs(term);
        }
        if (c.bias) sum += bias[j];
        if (c.relu) sum = sum > 0 ? sum : 0;
        const int64_t at = batch * c.m * c.n + i * c.n + j;
        ASSERT_NEAR(out[at], sum, 1e-5 * (magnitude + 1)) << "out[" << at << "]";
        largest_difference_from_fp32 = std::max(largest_difference_from_fp32, std::abs(double(out[at]) - out_fp32[at]));
      }
    }
  }
  // bf16 keeps 8 significant bits: products of k >= 16 terms of [-1, 1) move by ~1e-3.
  EXPECT_GT(largest_difference_from_fp32, 1e-4);
}

TEST(Bf16MatMulTest, EveryFormEqualsTheProductOfRoundedOperands) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      ExpectBf16Product({ta, tb, 1, 37, 29, 64, false, false});
      ExpectBf16Product({ta, tb, 3, 8, 16, 24, false, false});
    }
  }
  ExpectBf16Product({false, false, 1, 33, 40, 48, true, false});
  ExpectBf16Product({false, true, 1, 16, 24, 32, true, true});
}

// On a CPU with AVX-512 BF16 the products must reach oneDNN's bf16 primitive, not the
// rounded-operand fp32 route (same values, no speed-up): the probe's 2x2 product and a
// kernel-sized one both take it.
TEST(Bf16MatMulTest, Avx512Bf16CpuTakesTheDnnlRoute) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  EXPECT_TRUE(cpu::Bf16MatmulUsesDnnl());
  std::vector<BFloat16> a(64 * 48, ToBFloat16(0.5f)), b(48 * 40, ToBFloat16(-2.0f));
  std::vector<float> c(64 * 40);
  EXPECT_EQ(cpu::Bf16MatmulBatched(false, false, 1, 64, 40, 48, a.data(), 48, 64 * 48, b.data(), 40, 48 * 40,
                                   nullptr, false, c.data(), 40),
            cpu::BF16MatmulRoute::kDnnlBf16);
  EXPECT_EQ(c[0], -48.0f);
}

TEST(Bf16MatMulTest, UnknownComputeDtypeIsAnError) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), out(4);
  const AttrMap attrs = {{"compute_dtype", std::string("fp8")}};
  absl::StatusOr<KernelFunction> matmul = FindCpuKernel("matmul");
  ASSERT_TRUE(matmul.ok());
  KernelContext context;
  context.attrs = &attrs;
  context.inputs = {Argument(&a, Shape{2, 2}), Argument(&b, Shape{2, 2})};
  context.outputs = {Argument(&out, Shape{2, 2})};
  const absl::Status status = (*matmul)(context);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("compute_dtype is \"fp8\"; valid: \"f32\", \"bf16\""), std::string::npos)
      << status;
}

}  // namespace
}  // namespace oneflow
