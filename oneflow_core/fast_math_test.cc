#include "oneflow_core/fast_math.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr uint32_t kTwoTo24 = 1u << 24;

// Every u the normal generator takes the logarithm of: k * 2^-24, k in [1, 2^24].
TEST(FastMathTest, LogWithinItsBoundOnEveryGeneratorInput) {
  double max_relative = 0;
  uint32_t worst = 0;
  for (uint32_t k = 1; k <= kTwoTo24; ++k) {
    const float u = static_cast<float>(k) / static_cast<float>(kTwoTo24);
    const double exact = std::log(static_cast<double>(k) / kTwoTo24);
    const float got = FastLog(u);
    if (k == kTwoTo24) {
      ASSERT_EQ(got, 0.0f);  // ln 1 exactly: r = 0, not a tiny negative under sqrt.
      continue;
    }
    const double relative = std::abs(got - exact) / std::abs(exact);
    if (relative > max_relative) {
      max_relative = relative;
      worst = k;
    }
  }
  // The header documents 8.1e-8 measured, 1e-7 promised.
  EXPECT_LE(max_relative, 1.0e-7) << "at u = " << worst << " * 2^-24";
  EXPECT_GE(max_relative, 1.0e-8) << "the comparison did not measure anything";
}

// Outside the generator's grid: positive normal floats over the whole exponent range.
TEST(FastMathTest, LogOverTheFloatRange) {
  double max_relative = 0;
  for (double x = 1.5e-38; x < 3e38; x *= 1.0137) {
    const float value = static_cast<float>(x);
    const double exact = std::log(static_cast<double>(value));
    if (exact == 0) continue;
    max_relative = std::max(max_relative, std::abs(FastLog(value) - exact) / std::abs(exact));
  }
  EXPECT_LE(max_relative, 1.0e-7);
  EXPECT_NEAR(FastLog(2.0f), std::log(2.0), 1e-7);
  EXPECT_EQ(FastLog(1.0f), 0.0f);
}

// Every angle the generator takes: 2 pi k / 2^24, k in [0, 2^24).
TEST(FastMathTest, SinCosWithinTheirBoundOnEveryGeneratorInput) {
  double max_sin = 0, max_cos = 0;
  for (uint32_t k = 0; k < kTwoTo24; ++k) {
    float sine, cosine;
    FastSinCosTurns(k, &sine, &cosine);
    const double angle = 2.0 * M_PI * k / kTwoTo24;
    max_sin = std::max(max_sin, std::abs(sine - std::sin(angle)));
    max_cos = std::max(max_cos, std::abs(cosine - std::cos(angle)));
  }
  // The header documents 1.1e-7 measured, 1.5e-7 promised.
  EXPECT_LE(max_sin, 1.5e-7);
  EXPECT_LE(max_cos, 1.5e-7);
  // The quarter turns are exact: the reduction leaves x = 0 there.
  const std::array<float, 4> quarter_sines = {0, 1, 0, -1}, quarter_cosines = {1, 0, -1, 0};
  for (uint32_t quarter = 0; quarter < 4; ++quarter) {
    float sine, cosine;
    FastSinCosTurns(quarter << 22, &sine, &cosine);
    EXPECT_EQ(sine, quarter_sines[quarter]) << quarter;
    EXPECT_EQ(cosine, quarter_cosines[quarter]) << quarter;
  }
}

}  // namespace
}  // namespace oneflow
