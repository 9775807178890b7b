// Exp and the GELU functions against libm in double, over their whole domain, both as
// float (ExpF, GeluF, GeluDerivativeF) and on F32x8 (what the kernels run: every sweep
// is evaluated 8 points at a time too, and held to the same bounds).
#include "kernels/cpu/vector_math.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace cpu {
namespace {

constexpr double kUlp = 5.9604644775390625e-08;  // 2^-24: half an ulp of 1 in float.

// The points low, low + step, ... <= high, in float.
std::vector<float> Sweep(float low, float high, float step) {
  std::vector<float> points;
  for (float x = low; x <= high; x += step) points.push_back(x);
  return points;
}

// fn over `points` on F32x8, 8 points per call (the last call padded with the last point).
template <typename Fn>
std::vector<float> OnFloat8(const std::vector<float>& points, Fn fn) {
  std::vector<float> values(points.size());
  for (size_t i = 0; i < points.size(); i += kLanes) {
    const int64_t n = std::min<int64_t>(kLanes, points.size() - i);
    const F32x8 result = fn(LoadPartial(points.data() + i, n, points.back()));
    StorePartial(values.data() + i, n, result);
  }
  return values;
}

// fn on each of `points` as a float.
template <typename Fn>
std::vector<float> OnFloat(const std::vector<float>& points, Fn fn) {
  std::vector<float> values;
  for (float x : points) values.push_back(fn(x));
  return values;
}

// Both forms of fn over `points`: {"float", values}, {"F32x8", values}.
template <typename Fn>
std::vector<std::pair<const char*, std::vector<float>>> BothForms(const std::vector<float>& points,
                                                                  Fn fn) {
  return {{"float", OnFloat(points, [&](float x) { return fn(x); })},
          {"F32x8", OnFloat8(points, [&](F32x8 x) { return fn(x); })}};
}

// Exp's worst relative error over the sweep and over every 448th float of [-87.33, 88] (5
// M points, a subset of the 320 M measured for the header comment).
TEST(VectorMathTest, ExpIsWithinTwoUlpOfLibm) {
  std::vector<float> points = Sweep(-87.33f, 88.0f, 0.00037f);
  for (uint32_t bits = 0; bits < 0x42b00000u; bits += 7 * 64) {  // |x| < 88
    float x;
    std::memcpy(&x, &bits, sizeof(x));
    points.push_back(x);
    if (-x >= -87.33f) points.push_back(-x);
  }
  const auto exp = [](auto x) { return Exp(x); };
  const auto exp_up_to_88 = [](auto x) { return ExpUpTo88(x); };
  const auto exp_for_sum = [](auto x) { return ExpForSum(x); };  // Measured 1.6e-7.
  for (const auto& forms :
       {BothForms(points, exp), BothForms(points, exp_up_to_88), BothForms(points, exp_for_sum)}) {
    for (const auto& [form, values] : forms) {
      double worst = 0;
      for (size_t i = 0; i < points.size(); ++i) {
        const double want = std::exp(static_cast<double>(points[i]));
        worst = std::max(worst, std::abs(values[i] - want) / want);
      }
      // 2 ulp (an ulp of a float is 2^-23 relative at most); measured 8.5e-8 (Exp and
      // ExpUpTo88) and 1.6e-7 (ExpForSum).
      EXPECT_LT(worst, 4 * kUlp) << form;
    }
  }
  EXPECT_EQ(ExpF(0.0f), 1.0f);
  EXPECT_EQ(Exp(F32x8{})[3], 1.0f);
  EXPECT_EQ(ExpUpTo88(F32x8{})[3], 1.0f);
}

#if defined(OF_AVX512_CODE)
// The 16-lane functions (AVX-512) on 16 points at a time.
OF_TARGET_AVX512 void On16(int which, const float* x, float* out) {
  const __m512 v = _mm512_loadu_ps(x);
  __m512 result;
  switch (which) {
    case 0:
      result = ExpForSum16(v);
      break;
    case 1:
      result = ExpUpTo88x16(v);
      break;
    case 2:
      result = Exp16(v);
      break;
    case 3:
      result = Gelu16(v);
      break;
    default:
      result = GeluDerivative16(v);
      break;
  }
  _mm512_storeu_ps(out, result);
}
#endif

// The 16-lane functions (AVX-512) are their F32x8 forms bit for bit on every lane: the
// kernels that run them on AVX-512 give the values the AVX2 code gives.
TEST(VectorMathTest, SixteenLanesAreTheEightLaneFunctions) {
#if defined(OF_AVX512_CODE)
  if (!CpuHasAvx512()) GTEST_SKIP() << "no AVX-512";
  std::vector<float> points = Sweep(-100.0f, 100.0f, 0.0037f);
  for (float x : {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), -1e30f, 1e30f, -1e9f, -87.7f, -87.36f,
                  0.0f, -0.0f}) {
    points.push_back(x);
  }
  while (points.size() % 16 != 0) points.push_back(0.25f);
  const auto eight = [](int which, F32x8 x) {
    switch (which) {
      case 0:
        return ExpForSum(x);
      case 1:
        return ExpUpTo88(x);
      case 2:
        return Exp(x);
      case 3:
        return Gelu(x);
      default:
        return GeluDerivative(x);
    }
  };
  for (int which = 0; which < 5; ++which) {
    std::vector<float> values(points.size());
    for (size_t i = 0; i < points.size(); i += 16)
      On16(which, points.data() + i, values.data() + i);
    for (size_t i = 0; i < points.size(); i += kLanes) {
      const F32x8 want = eight(which, Load(points.data() + i));
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        const float got = values[i + lane], expected = want[lane];
        if (points[i + lane] > 88.0f && which == 1) continue;  // ExpUpTo88: garbage there.
        ASSERT_EQ(std::memcmp(&got, &expected, sizeof(got)), 0)
            << "function " << which << " at " << points[i + lane] << ": " << got << " vs "
            << expected;
      }
    }
  }
#else
  GTEST_SKIP() << "no AVX-512 code in this build";
#endif
}

TEST(VectorMathTest, ExpLimits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Gradual underflow down to -87.68, then exactly 0.
  EXPECT_NEAR(ExpF(-87.34f), std::exp(double{-87.34f}), 3e-45);
  EXPECT_GT(ExpF(-87.6f), 0.0f);
  EXPECT_EQ(ExpF(-87.7f), 0.0f);
  EXPECT_EQ(ExpF(-1e9f), 0.0f);
  EXPECT_EQ(ExpF(-inf), 0.0f);
  EXPECT_FLOAT_EQ(ExpF(1000.0f), std::exp(88.0f));
  EXPECT_TRUE(std::isnan(ExpF(nan)));
  const F32x8 limits = Exp(F32x8{-87.7f, -1e9f, -inf, 1000.0f, nan, inf, 0.0f, -0.0f});
  EXPECT_EQ(limits[0], 0.0f);
  EXPECT_EQ(limits[1], 0.0f);
  EXPECT_EQ(limits[2], 0.0f);
  EXPECT_FLOAT_EQ(limits[3], std::exp(88.0f));
  EXPECT_TRUE(std::isnan(limits[4]));
  EXPECT_FLOAT_EQ(limits[5], std::exp(88.0f));
  EXPECT_EQ(limits[6], 1.0f);
  EXPECT_EQ(limits[7], 1.0f);
  const F32x8 low = ExpUpTo88(F32x8{-87.7f, -1e9f, -inf, 88.0f, nan, -87.34f, 0.0f, -0.0f});
  EXPECT_EQ(low[0], 0.0f);
  EXPECT_EQ(low[1], 0.0f);
  EXPECT_EQ(low[2], 0.0f);
  EXPECT_FLOAT_EQ(low[3], std::exp(88.0f));
  EXPECT_TRUE(std::isnan(low[4]));
  EXPECT_NEAR(low[5], std::exp(double{-87.34f}), 3e-45);
  EXPECT_EQ(low[6], 1.0f);
  EXPECT_EQ(low[7], 1.0f);
  // ExpForSum: gradual underflow down to -87.39 only.
  EXPECT_GT(ExpForSum(-87.36f), 0.0f);
  EXPECT_EQ(ExpForSum(-87.4f), 0.0f);
  const F32x8 sum = ExpForSum(F32x8{-87.7f, -1e9f, -inf, 88.0f, nan, -87.34f, 0.0f, -0.0f});
  EXPECT_EQ(sum[0], 0.0f);
  EXPECT_EQ(sum[1], 0.0f);
  EXPECT_EQ(sum[2], 0.0f);
  EXPECT_NEAR(sum[3], std::exp(88.0), 2e-7 * std::exp(88.0));
  EXPECT_TRUE(std::isnan(sum[4]));
  EXPECT_NEAR(sum[5], std::exp(double{-87.34f}), 3e-45);
  EXPECT_EQ(sum[6], 1.0f);
  EXPECT_EQ(sum[7], 1.0f);
}

// The reference's tanh form in double, accurate where 1 + tanh(u) does not cancel.
double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// The same function in the sigmoid form, accurate in double everywhere.
double GeluDouble(double x) {
  return x / (1 + std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double GeluDerivativeDouble(double x) {
  const double e = std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x));
  const double s = 1 / (1 + e);
  return s * (1 + 2 * x * e * s * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x));
}

TEST(VectorMathTest, SigmoidFormIsTheTanhForm) {
  for (double x = -3; x <= 12; x += 0.01) EXPECT_NEAR(GeluDouble(x), GeluTanh(x), 1e-14) << x;
  // Central differences of the double form confirm the derivative.
  for (double x = -9; x <= 12; x += 0.01) {
    EXPECT_NEAR(GeluDerivativeDouble(x), (GeluDouble(x + 1e-6) - GeluDouble(x - 1e-6)) / 2e-6, 1e-8)
        << x;
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
    const std::vector<float> points = Sweep(range.low, range.high, 0.00071f);
    const auto gelus = BothForms(points, [](auto x) { return Gelu(x); });
    const auto derivatives = BothForms(points, [](auto x) { return GeluDerivative(x); });
    for (size_t form = 0; form < gelus.size(); ++form) {
      double worst_gelu = 0, worst_derivative = 0;
      for (size_t i = 0; i < points.size(); ++i) {
        const double gelu = GeluDouble(static_cast<double>(points[i]));
        const double derivative = GeluDerivativeDouble(static_cast<double>(points[i]));
        worst_gelu = std::max(worst_gelu, std::abs(gelus[form].second[i] - gelu) / std::abs(gelu));
        worst_derivative =
            std::max(worst_derivative, std::abs(derivatives[form].second[i] - derivative) /
                                           std::max(std::abs(derivative), range.derivative_floor));
      }
      EXPECT_LT(worst_gelu, range.gelu_bound)
          << gelus[form].first << " " << range.low << ".." << range.high;
      EXPECT_LT(worst_derivative, 2e-6)
          << derivatives[form].first << " " << range.low << ".." << range.high;
    }
  }
  EXPECT_EQ(GeluF(0.0f), 0.0f);
  EXPECT_EQ(GeluF(1e30f), 1e30f);
  EXPECT_EQ(GeluDerivativeF(1e30f), 1.0f);
  EXPECT_NEAR(GeluDerivativeF(-1e30f), 0.0f, 1e-30);
  EXPECT_NEAR(GeluF(-30.0f), 0.0f, 1e-30);
  const F32x8 limits{0.0f, 1e30f, -30.0f, -1e30f, 0.0f, 0.0f, 0.0f, 0.0f};
  const F32x8 gelu = Gelu(limits);
  const F32x8 derivative = GeluDerivative(limits);
  EXPECT_EQ(gelu[0], 0.0f);
  EXPECT_EQ(gelu[1], 1e30f);
  EXPECT_NEAR(gelu[2], 0.0f, 1e-30);
  EXPECT_EQ(derivative[1], 1.0f);
  EXPECT_NEAR(derivative[3], 0.0f, 1e-30);
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
