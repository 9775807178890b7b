// Int4 with the scale chosen by error (CodecOptions::fitted_int4_scale, int_quant.h
// ChooseInt4Scale): exact where a divisor fits the group, never worse than max|x| / 7,
// code -8 decoded, nothing above the group's largest magnitude, the same bytes however
// the buffers are aligned, and ignored under stochastic rounding.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/codec_test_data.h"
#include "kernels/compression/group_scale.h"
#include "kernels/compression/int_quant.h"

namespace oneflow {
namespace {

using codec_testing::Gaussian;
using codec_testing::GaussianWithOutliers;

CodecOptions Int4(int64_t group_size, bool fitted, bool hadamard = false) {
  CodecOptions options;
  options.codec = Codec::kInt4;
  options.group_size = group_size;
  options.hadamard = hadamard;
  options.fitted_int4_scale = fitted;
  return options;
}

std::vector<uint8_t> EncodeAll(const CodecOptions& options, const std::vector<float>& x) {
  std::vector<uint8_t> encoded(EncodedBytes(options, static_cast<int64_t>(x.size())));
  Encode(options, x.data(), static_cast<int64_t>(x.size()), encoded.data());
  return encoded;
}

std::vector<float> RoundTrip(const CodecOptions& options, const std::vector<float>& x) {
  const std::vector<uint8_t> encoded = EncodeAll(options, x);
  std::vector<float> decoded(x.size());
  Decode(options, encoded.data(), static_cast<int64_t>(x.size()), decoded.data());
  return decoded;
}

float ScaleOfGroup(const std::vector<uint8_t>& encoded, int64_t group) {
  float scale;
  std::memcpy(&scale, encoded.data() + 4 * group, 4);
  return scale;
}

// -1 and 1/8 .. 7/8 are codes -8 and 1..7 of step 1/8: divisor 8 loses nothing, while
// max|x| / 7 rounds six of them. The fitted encoder takes 8 and decodes the group exactly.
TEST(FittedInt4ScaleTest, UsesMinusEightWhereTheGroupFitsIt) {
  const std::vector<float> x = {-1.0f, 0.125f, 0.25f, 0.375f, 0.5f, 0.625f, 0.75f, 0.875f};
  const std::vector<uint8_t> encoded = EncodeAll(Int4(8, true), x);
  EXPECT_EQ(ScaleOfGroup(encoded, 0), 0.125f);
  EXPECT_EQ(encoded[4] & 0xF, 0x8) << "element 0's code is -8";
  const std::vector<float> decoded = RoundTrip(Int4(8, true), x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(decoded[i], x[i]) << i;
  // The unfitted encoder: scale 1/7, and the group does not survive.
  EXPECT_EQ(ScaleOfGroup(EncodeAll(Int4(8, false), x), 0), 1.0f / 7.0f);
  const std::vector<float> plain = RoundTrip(Int4(8, false), x);
  int exact = 0;
  for (size_t i = 0; i < x.size(); ++i) exact += plain[i] == x[i];
  EXPECT_LT(exact, 4);
}

// A group max|x| / 7 represents exactly keeps that scale (the first candidate wins ties).
TEST(FittedInt4ScaleTest, KeepsMaxOverSevenWhenItIsExact) {
  const std::vector<float> x = {7.0f, -7.0f, 3.0f, 0.0f, -1.0f, 2.0f, 5.0f, -6.0f};
  const std::vector<uint8_t> encoded = EncodeAll(Int4(8, true), x);
  EXPECT_EQ(ScaleOfGroup(encoded, 0), 1.0f);
  EXPECT_EQ(RoundTrip(Int4(8, true), x), x);
}

// The chosen divisor is the one a brute-force double-precision search over
// kInt4Divisors finds (up to float ties), and on Gaussian groups of 32 most groups clip.
TEST(FittedInt4ScaleTest, ChoosesTheDivisorWithTheLeastError) {
  const std::vector<float> x = Gaussian(32 * 500, 21);
  int clipped = 0;
  for (int64_t group = 0; group < 500; ++group) {
    const float* values = x.data() + 32 * group;
    const compression::GroupRange range = compression::MeasureGroup(values, 32);
    const compression::Int4Scale chosen = compression::ChooseInt4Scale(values, 32, 1.0f, range);
    auto error_of = [&](double step, double lowest) {
      double sum = 0;
      for (int i = 0; i < 32; ++i) {
        const double code = std::min(7.0, std::max(lowest, std::nearbyint(values[i] / step)));
        sum += (code * step - values[i]) * (code * step - values[i]);
      }
      return sum;
    };
    double best = 1e30;
    for (float divisor : compression::kInt4Divisors) {
      best = std::min(best, error_of(range.abs_max / divisor, divisor >= 8.0f ? -8.0 : -7.0));
    }
    const double got = error_of(chosen.scale.scale, chosen.lowest_code);
    ASSERT_LE(got, best * (1 + 1e-4) + 1e-12) << "group " << group;
    clipped += chosen.scale.scale < range.abs_max / 7.0f * (1 - 1e-6f);
  }
  std::printf("%d of 500 Gaussian groups of 32 clip their largest magnitude\n", clipped);
  EXPECT_GT(clipped, 250);
}

// Over many groups, per group never worse than max|x| / 7, and on the whole tensor the
// errors codec_bench reports: Gaussian G=32 9.7% -> 8.8%, G=128 11.7% -> 10.2% (with
// 0.1% outliers of 100x, whose groups keep max|x| / 7: 5.6% -> 5.4%, 10.1% -> 9.7%).
TEST(FittedInt4ScaleTest, NoGroupLosesMoreThanWithMaxOverSeven) {
  for (bool outliers : {false, true}) {
    const std::vector<float> x = outliers ? GaussianWithOutliers(1 << 14) : Gaussian(1 << 14);
    for (int64_t group_size : {32, 128}) {
      const std::vector<float> fitted = RoundTrip(Int4(group_size, true), x);
      const std::vector<float> plain = RoundTrip(Int4(group_size, false), x);
      double fitted_total = 0, plain_total = 0, signal = 0;
      for (size_t begin = 0; begin < x.size(); begin += group_size) {
        double fitted_error = 0, plain_error = 0;
        for (size_t i = begin; i < begin + group_size; ++i) {
          fitted_error += (fitted[i] - x[i]) * (fitted[i] - x[i]);
          plain_error += (plain[i] - x[i]) * (plain[i] - x[i]);
          signal += x[i] * x[i];
        }
        ASSERT_LE(fitted_error, plain_error * (1 + 1e-5) + 1e-12) << "group at " << begin;
        fitted_total += fitted_error;
        plain_total += plain_error;
      }
      const double fitted_relative = std::sqrt(fitted_total / signal);
      const double plain_relative = std::sqrt(plain_total / signal);
      std::printf("int4 G=%lld %s: relative L2 error %.4f with max|x|/7, %.4f fitted\n",
                  static_cast<long long>(group_size), outliers ? "gaussian+outliers" : "gaussian",
                  plain_relative, fitted_relative);
      if (!outliers) {
        EXPECT_LT(fitted_relative, group_size == 32 ? 0.090 : 0.105);
        EXPECT_GT(plain_relative, group_size == 32 ? 0.095 : 0.115);
      }
      EXPECT_LT(fitted_relative, (outliers ? 0.99 : 0.92) * plain_relative);
    }
  }
}

// Nothing decodes above its group's largest magnitude (code -8 only with divisors >= 8),
// and groups near FLT_MAX stay finite; rotated groups too.
TEST(FittedInt4ScaleTest, DecodedValuesStayWithinTheGroupsLargestMagnitude) {
  std::vector<float> x = GaussianWithOutliers(4096, 9);
  std::vector<float> huge = Gaussian(256, 4);
  for (float& value : huge) value *= 1e37f;
  huge[3] = FLT_MAX;
  huge[200] = -FLT_MAX;
  for (const std::vector<float>* data : {&x, &huge}) {
    const std::vector<float> decoded = RoundTrip(Int4(32, true), *data);
    for (size_t begin = 0; begin < data->size(); begin += 32) {
      float largest = 0;
      for (size_t i = begin; i < begin + 32; ++i) largest = std::max(largest, std::fabs((*data)[i]));
      for (size_t i = begin; i < begin + 32; ++i) {
        ASSERT_TRUE(std::isfinite(decoded[i])) << i;
        ASSERT_LE(std::fabs(decoded[i]), largest) << i;
      }
    }
  }
  const std::vector<float> rotated = RoundTrip(Int4(128, true, /*hadamard=*/true), x);
  const std::vector<float> rotated_plain = RoundTrip(Int4(128, false, /*hadamard=*/true), x);
  double fitted_error = 0, plain_error = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    fitted_error += (rotated[i] - x[i]) * (rotated[i] - x[i]);
    plain_error += (rotated_plain[i] - x[i]) * (rotated_plain[i] - x[i]);
  }
  EXPECT_LT(fitted_error, plain_error);
}

// Odd group sizes and short last groups put groups at odd nibbles: same bytes as encoding
// them one group at a time would give is what Decode reads back.
TEST(FittedInt4ScaleTest, OddGroupsAndShortLastGroupsRoundTrip) {
  const std::vector<float> x = Gaussian(1001, 12);
  for (int64_t group_size : {5, 33}) {
    const std::vector<float> decoded = RoundTrip(Int4(group_size, true), x);
    const std::vector<float> plain = RoundTrip(Int4(group_size, false), x);
    double fitted_error = 0, plain_error = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      fitted_error += (decoded[i] - x[i]) * (decoded[i] - x[i]);
      plain_error += (plain[i] - x[i]) * (plain[i] - x[i]);
    }
    EXPECT_LE(fitted_error, plain_error * (1 + 1e-5)) << group_size;
  }
}

// Stochastic rounding keeps max|x| / 7: the option changes nothing there.
TEST(FittedInt4ScaleTest, IgnoredUnderStochasticRounding) {
  const std::vector<float> x = Gaussian(1000, 3);
  CodecOptions stochastic = Int4(32, false);
  stochastic.stochastic_rounding = true;
  stochastic.seed = 7;
  CodecOptions both = stochastic;
  both.fitted_int4_scale = true;
  EXPECT_EQ(EncodeAll(stochastic, x), EncodeAll(both, x));
}

// Other codecs ignore it.
TEST(FittedInt4ScaleTest, IgnoredByOtherCodecs) {
  const std::vector<float> x = GaussianWithOutliers(1000, 3);
  for (Codec codec : {Codec::kInt8, Codec::kFp8E4M3, Codec::kFp8E5M2}) {
    CodecOptions plain;
    plain.codec = codec;
    CodecOptions fitted = plain;
    fitted.fitted_int4_scale = true;
    EXPECT_EQ(EncodeAll(plain, x), EncodeAll(fitted, x)) << CodecName(codec);
  }
}

}  // namespace
}  // namespace oneflow
