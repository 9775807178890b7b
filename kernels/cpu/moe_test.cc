// The mixture-of-experts kernels (and the reference) on hand-computed values: routing
// order, ties, capacity drops and their count, the aux loss; the expert products never
// reading the weights of experts without tokens; and the errors for bad routing.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "oneflow_core/ops/reference/reference.h"

namespace oneflow {
namespace {

Dense Values(Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  return Dense{std::move(shape), std::move(values), dtype};
}

// The kernel's and the reference's results, which must be equal.
std::vector<Dense> RunBoth(const std::string& type, const std::vector<Dense>& inputs,
                       const AttrMap& attrs) {
  absl::StatusOr<std::vector<Dense>> got = RunCpuKernel(type, inputs, attrs);
  absl::StatusOr<std::vector<Dense>> want = EvaluateReference(type, inputs, attrs);
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(want.ok()) << want.status();
  if (!got.ok() || !want.ok()) return {};
  for (size_t r = 0; r < want->size(); ++r) {
    for (size_t i = 0; i < (*want)[r].values.size(); ++i) {
      EXPECT_NEAR((*got)[r].values[i], (*want)[r].values[i], 1e-6) << type << " result " << r;
    }
  }
  return *got;
}

// B = 2 samples, T = 4 tokens, E = 3 experts, top_k = 2, capacity = 2.
//   sample 0: t0 [.5 .3 .2] -> e0, e1    t1 [.4 .4 .2] -> e0, e1 (tie: lower id first)
//             t2 [.6 .1 .3] -> e0, e2    t3 [.2 .2 .6] -> e2, e0 (tie e0/e1 -> e0)
//   first choices in token order: t0 e0#0, t1 e0#1, t2 e0 full (dropped), t3 e2#0;
//   then second choices: t0 e1#0, t1 e1#1, t2 e2#1, t3 e0 full (dropped).
//   Token-major order would instead give t2's e2 slot 0 and t3's slot 1.
//   sample 1: every token prefers e1, then e0 (tie with e2): e1 takes t0, t1; e0 takes
//   t0, t1 as their second choices; t2 and t3 lose both.
TEST(MoeKernelTest, RouteIsKMajorWithTiesToTheLowerExpertAndCapacityDrops) {
  const Dense probs = Values({2, 4, 3}, {.5, .3, .2, .4, .4, .2, .6, .1, .3, .2, .2, .6,  //
                                         .1, .8, .1, .1, .8, .1, .1, .8, .1, .1, .8, .1});
  const std::vector<Dense> out =
      RunBoth("moe_route", {RoundToFloat(probs)}, {{"top_k", int64_t{2}}, {"capacity", int64_t{2}}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype, DType::kI32);
  EXPECT_EQ(out[0].values, (std::vector<double>{0, 1, 0, 1, -1, 2, 2, -1,  //
                                                1, 0, 1, 0, -1, -1, -1, -1}));
  EXPECT_EQ(out[1].values, (std::vector<double>{0, 0, 1, 1, -1, 1, 0, -1,  //
                                                0, 0, 1, 1, -1, -1, -1, -1}));
  EXPECT_EQ(out[2].values, (std::vector<double>{2, 4}));
}

TEST(MoeKernelTest, DispatchAndCombinePlaceAndWeighTokens) {
  // One sample, T = 3, E = 2, K = 1, C = 2: t0 -> e1#0, t1 dropped, t2 -> e1#1.
  const Dense index = Values({1, 3, 1}, {1, -1, 1}, DType::kI32);
  const Dense slot = Values({1, 3, 1}, {0, -1, 1}, DType::kI32);
  const Dense x = Values({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  const std::vector<Dense> buf = RunBoth("moe_dispatch", {x, index, slot},
                                     {{"experts", int64_t{2}}, {"capacity", int64_t{2}}});
  ASSERT_EQ(buf.size(), 1u);
  EXPECT_EQ(buf[0].shape, (Shape{1, 2, 2, 2}));
  EXPECT_EQ(buf[0].values, (std::vector<double>{0, 0, 0, 0, 1, 2, 5, 6}));
  const Dense probs = Values({1, 3, 2}, {0.25, 0.75, 0.5, 0.5, 0.5, 0.5});
  EXPECT_EQ(RunBoth("moe_combine", {buf[0], probs, index, slot}, {})[0].values,
            (std::vector<double>{0.75, 1.5, 0, 0, 2.5, 3}));
  EXPECT_EQ(RunBoth("moe_dispatch_grad", {buf[0], index, slot}, {})[0].values,
            (std::vector<double>{1, 2, 0, 0, 5, 6}));
  const Dense dy = Values({1, 3, 2}, {1, 1, 1, 1, 2, 0});
  EXPECT_EQ(RunBoth("moe_combine_grad_probs", {dy, buf[0], index, slot}, {})[0].values,
            (std::vector<double>{0, 3, 0, 0, 0, 10}));
  EXPECT_EQ(RunBoth("moe_combine_grad_buf", {dy, probs, index, slot}, {{"capacity", int64_t{2}}})[0]
                .values,
            (std::vector<double>{0, 0, 0, 0, 0.75, 0.75, 1, 0}));
}

// Sample 0 of the routing test: argmax e0, e0 (tie), e0, e2 -> f = [3/4, 0, 1/4]; mean
// probabilities P = [1.7/4, 1/4, 1.3/4]; loss = 3 * (3/4 * 0.425 + 1/4 * 0.325) = 1.2.
TEST(MoeKernelTest, AuxLossIsTheSwitchTransformerLoss) {
  const Dense probs =
      RoundToFloat(Values({1, 4, 3}, {.5, .3, .2, .4, .4, .2, .6, .1, .3, .2, .2, .6}));
  EXPECT_NEAR(RunBoth("moe_aux_loss", {probs}, {})[0].values[0], 1.2, 1e-6);
  // d/dprobs = dy * E * f_e / T = 2 * 3 * [3/4, 0, 1/4] / 4 for every token.
  const std::vector<Dense> grad = RunBoth("moe_aux_loss_grad", {Values({1}, {2}), probs}, {});
  for (int64_t t = 0; t < 4; ++t) {
    EXPECT_DOUBLE_EQ(grad[0].values[t * 3 + 0], 1.125);
    EXPECT_DOUBLE_EQ(grad[0].values[t * 3 + 1], 0.0);
    EXPECT_DOUBLE_EQ(grad[0].values[t * 3 + 2], 0.375);
  }
}

// A data-parallel device may hold zeros (or anything) in the weights of experts none of
// its tokens use: the kernels only multiply used capacity rows, so those weights are
// never read, and the weight gradient of such an expert is exactly 0.
TEST(MoeKernelTest, ExpertsWithoutTokensNeverReadTheirWeights) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // B = 2, E = 3, C = 2, H = 2, F = 1. Expert 1 has no tokens; expert 0 uses one slot.
  const Dense buf = Values({2, 3, 2, 2}, {1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 5, 6,  //
                                          2, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0});
  const Dense w = Values({3, 2, 1}, {1, 10, nan, nan, 2, 3});
  const absl::StatusOr<std::vector<Dense>> out =
      RunCpuKernel("expert_matmul", {buf, w}, {{"parallel", std::string("data")}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values, (std::vector<double>{21, 0, 0, 0, 18, 28, 12, 0, 0, 0, 5, 0}));
  const Dense dout = Values({2, 3, 2, 1}, {1, 0, 0, 0, 1, 1, 2, 0, 0, 0, 1, 0});
  const absl::StatusOr<std::vector<Dense>> dbuf =
      RunCpuKernel("expert_matmul_grad_data", {dout, w}, {{"parallel", std::string("data")}});
  ASSERT_TRUE(dbuf.ok()) << dbuf.status();
  EXPECT_EQ((*dbuf)[0].values, (std::vector<double>{1, 10, 0, 0, 0, 0, 0, 0, 2, 3, 2, 3,  //
                                                    2, 20, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0}));
  const absl::StatusOr<std::vector<Dense>> dw =
      RunCpuKernel("expert_matmul_grad_weight", {buf, dout}, {{"parallel", std::string("data")}});
  ASSERT_TRUE(dw.ok()) << dw.status();
  // dw[0] = [1, 2] * 1 + [2, 1] * 2; dw[1] = 0 exactly; dw[2] = [3,4] + [5,6] + [1,1].
  EXPECT_EQ((*dw)[0].values, (std::vector<double>{5, 4, 0, 0, 9, 11}));
  EXPECT_EQ(std::signbit((*dw)[0].values[2]), false);
}

TEST(MoeKernelTest, BadRoutingIsRefusedWithTheChoiceAndWhatWouldBeValid) {
  const Dense x = Values({1, 2, 2}, {1, 2, 3, 4});
  const AttrMap attrs = {{"experts", int64_t{2}}, {"capacity", int64_t{2}}};
  const absl::Status expert = RunCpuKernel("moe_dispatch",
                                           {x, Values({1, 2, 1}, {0, 2}, DType::kI32),
                                            Values({1, 2, 1}, {0, 0}, DType::kI32)},
                                           attrs)
                                  .status();
  EXPECT_EQ(expert.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(expert.message(),
            "kernel 'moe_dispatch': choice [0, 1, 0] has index 2 and slot 0; valid: both -1 "
            "(dropped) or index in 0..1 and slot in 0..1");
  const absl::Status half = RunCpuKernel("moe_dispatch",
                                         {x, Values({1, 2, 1}, {0, -1}, DType::kI64),
                                          Values({1, 2, 1}, {0, 1}, DType::kI64)},
                                         attrs)
                                .status();
  EXPECT_EQ(half.message(),
            "kernel 'moe_dispatch': choice [0, 1, 0] has index -1 and slot 1; valid: both -1 "
            "(dropped) or index in 0..1 and slot in 0..1");
  // The reference refuses the same routing.
  EXPECT_EQ(EvaluateReference("moe_dispatch",
                              {x, Values({1, 2, 1}, {0, 2}, DType::kI32),
                               Values({1, 2, 1}, {0, 0}, DType::kI32)},
                              attrs)
                .status()
                .message(),
            "reference of 'moe_dispatch': choice [0, 1, 0] has index 2 and slot 0; valid: both "
            "-1 (dropped) or index in 0..1 and slot in 0..1");
}

}  // namespace
}  // namespace oneflow
