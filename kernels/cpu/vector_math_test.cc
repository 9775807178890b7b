// ExpF and the GELU helpers against libm in double, over their whole domain.
#include "kernels/cpu/vector_math.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace oneflow {
namespace cpu {
namespace {

constexpr double kUlp = 5.9604644775390625e-08;  // 2^-24: half an ulp of 1 in float.

TEST(VectorMathTest, ExpIsWithinTwoUlpOfLibm) {
  double worst = 0;
  for (float x = -87.33f; x <= 88.0f; x += 0.00037f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(ExpF(x) - want) / want);
  }
  EXPECT_LT(worst, 4 * kUlp);  // 2 ulp (an ulp of a float is 2^-23 relative at most).
  EXPECT_EQ(ExpF(0.0f), 1.0f);
}

TEST(VectorMathTest, ExpLimits) {
  EXPECT_EQ(ExpF(-87.34f), 0.0f);
  EXPECT_EQ(ExpF(-1e9f), 0.0f);
  EXPECT_EQ(ExpF(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_FLOAT_EQ(ExpF(1000.0f), std::exp(88.0f));
  EXPECT_TRUE(std::isnan(ExpF(std::numeric_limits<float>::quiet_NaN())));
}

// The reference's tanh form in double, accurate where 1 + tanh(u) does not cancel.
double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// The same function in the sigmoid form, accurate in double everywhere.
double Gelu(double x) {
  return x / (1 + std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double GeluDerivative(double x) {
  const double e = std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x));
  const double s = 1 / (1 + e);
  return s * (1 + 2 * x * e * s * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x));
}

TEST(VectorMathTest, SigmoidFormIsTheTanhForm) {
  for (double x = -3; x <= 12; x += 0.01) EXPECT_NEAR(Gelu(x), GeluTanh(x), 1e-14) << x;
  // Central differences of the double form confirm the derivative.
  for (double x = -9; x <= 12; x += 0.01) {
    EXPECT_NEAR(GeluDerivative(x), (Gelu(x + 1e-6) - Gelu(x - 1e-6)) / 2e-6, 1e-8) << x;
  }
}

// GELU to a relative 1e-6 where it is not tiny, and relatively accurate in the negative
// tail too, where the tanh form in float would give 0. The error grows with |u| there: u
// is computed in float (relative error ~1e-7) and exp(-2u) multiplies that by 2|u|,
// about 70 at x = -9 (values ~1e-30). The derivative is O(1) on [-3, 12] and crosses
// zero near x = -0.75, where its two terms (each ~0.3) cancel, so it is held to an
// absolute 1e-6 there; in the tail (zero crossing near -5.2) to 1e-6 of max(|d|, 1e-3).
TEST(VectorMathTest, GeluAndItsDerivativeMatchTheDoubleFormula) {
  struct Range {
    float low, high;
    double gelu_bound, derivative_floor;
  };
  for (const Range& range : {Range{-3.0f, 12.0f, 1e-6, 1.0}, Range{-9.0f, -3.0f, 2e-5, 1e-3}}) {
    double worst_gelu = 0, worst_derivative = 0;
    for (float x = range.low; x <= range.high; x += 0.00071f) {
      const double gelu = Gelu(x);
      const double derivative = GeluDerivative(x);
      worst_gelu = std::max(worst_gelu, std::abs(GeluF(x) - gelu) / std::abs(gelu));
      worst_derivative =
          std::max(worst_derivative, std::abs(GeluDerivativeF(x) - derivative) /
                                         std::max(std::abs(derivative), range.derivative_floor));
    }
    EXPECT_LT(worst_gelu, range.gelu_bound) << range.low << ".." << range.high;
    EXPECT_LT(worst_derivative, 2e-6) << range.low << ".." << range.high;
  }
  EXPECT_EQ(GeluF(0.0f), 0.0f);
  EXPECT_EQ(GeluF(1e30f), 1e30f);
  EXPECT_EQ(GeluDerivativeF(1e30f), 1.0f);
  EXPECT_NEAR(GeluDerivativeF(-1e30f), 0.0f, 1e-30);
  EXPECT_NEAR(GeluF(-30.0f), 0.0f, 1e-30);
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
