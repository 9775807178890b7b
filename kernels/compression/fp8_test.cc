// FP8 conversions against the definition: every one of the 256 codes of each format
// decoded from the formula, every rounding tie between neighbouring codes, saturation,
// NaN, a brute-force nearest-code encoder on many floats, and the vector forms against
// the scalar ones bit for bit.
#include "kernels/compression/fp8.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

struct Format {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;  // E5M2: exponent all ones is Inf/NaN; E4M3: only S.1111.111 is NaN
  float max;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  Fp8Format format;
};

const Format kE4M3{"e4m3", 4, 3, 7, false, 448.0f, FloatToE4M3, E4M3ToFloat, Fp8Format::kE4M3};
const Format kE5M2{"e5m2", 5, 2, 15, true, 57344.0f, FloatToE5M2, E5M2ToFloat, Fp8Format::kE5M2};

// The value of `code` from the format's definition, in double.
double ReferenceDecode(const Format& f, uint8_t code) {
  const int sign = code >> 7;
  const int exponent = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int all_ones = (1 << f.exponent_bits) - 1;
  double magnitude;
  if (f.has_infinity && exponent == all_ones) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_infinity && exponent == all_ones && mantissa == (1 << f.mantissa_bits) - 1) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits);
  } else {
    magnitude = std::ldexp((1 << f.mantissa_bits) + mantissa, exponent - f.bias - f.mantissa_bits);
  }
  return sign ? -magnitude : magnitude;
}

bool IsFiniteCode(const Format& f, uint8_t code) { return std::isfinite(ReferenceDecode(f, code)); }

// The code nearest to x (ties to the even code), saturating: a brute-force search.
uint8_t ReferenceEncode(const Format& f, float x) {
  if (std::isnan(x)) return static_cast<uint8_t>((Bits(x) >> 24 & 0x80) | 0x7F);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double magnitude = std::fabs(static_cast<double>(x));
  uint8_t best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int code = 0; code < 0x80; ++code) {
    if (!IsFiniteCode(f, static_cast<uint8_t>(code))) continue;
    const double value = ReferenceDecode(f, static_cast<uint8_t>(code));
    if (magnitude >= f.max && value == f.max) return static_cast<uint8_t>(sign | code);
    const double distance = std::fabs(value - magnitude);
    if (distance < best_distance || (distance == best_distance && code % 2 == 0)) {
      best = static_cast<uint8_t>(code);
      best_distance = distance;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

class Fp8Test : public ::testing::TestWithParam<Format> {};

TEST_P(Fp8Test, EveryCodeDecodesAsDefined) {
  const Format& f = GetParam();
  for (int code = 0; code < 256; ++code) {
    const double want = ReferenceDecode(f, static_cast<uint8_t>(code));
    const float got = f.decode(static_cast<uint8_t>(code));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << f.name << " code " << code;
    } else {
      EXPECT_EQ(Bits(got), Bits(static_cast<float>(want))) << f.name << " code " << code;
    }
  }
  EXPECT_EQ(f.decode(f.encode(f.max)), f.max);
}

TEST_P(Fp8Test, EveryFiniteCodeRoundTrips) {
  const Format& f = GetParam();
  for (int code = 0; code < 256; ++code) {
    if (!IsFiniteCode(f, static_cast<uint8_t>(code))) continue;
    EXPECT_EQ(f.encode(f.decode(static_cast<uint8_t>(code))), code) << f.name;
  }
}

// Between neighbouring codes c and c + 1 (same sign), the midpoint goes to the even code
// and anything off the midpoint to the nearer one. Midpoints of FP8 values are floats.
TEST_P(Fp8Test, TiesRoundToEvenAndOthersToNearest) {
  const Format& f = GetParam();
  int ties = 0;
  for (int sign = 0; sign < 2; ++sign) {
    for (int code = 0; code + 1 < 0x80; ++code) {
      const uint8_t low = static_cast<uint8_t>(code | sign << 7);
      const uint8_t high = static_cast<uint8_t>((code + 1) | sign << 7);
      if (!IsFiniteCode(f, low) || !IsFiniteCode(f, high)) continue;
      const float a = f.decode(low), b = f.decode(high);
      const float midpoint = static_cast<float>((static_cast<double>(a) + b) / 2);
      ASSERT_EQ(static_cast<double>(midpoint), (static_cast<double>(a) + b) / 2);
      const uint8_t even = code % 2 == 0 ? low : high;
      EXPECT_EQ(f.encode(midpoint), even) << f.name << " tie between " << a << " and " << b;
      const float toward_a = std::nextafter(midpoint, a), toward_b = std::nextafter(midpoint, b);
      EXPECT_EQ(f.encode(toward_a), low) << f.name << " just off " << midpoint;
      EXPECT_EQ(f.encode(toward_b), high) << f.name << " just off " << midpoint;
      ++ties;
    }
  }
  EXPECT_GT(ties, 200);
}

TEST_P(Fp8Test, SaturatesInsteadOfInfinity) {
  const Format& f = GetParam();
  const uint8_t max_code = f.encode(f.max);
  for (float x : {f.max, std::nextafter(f.max, 1e30f), f.max * 1.0625f, f.max * 1.25f, f.max * 2,
                  1e30f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(f.encode(x), max_code) << f.name << " " << x;
    EXPECT_EQ(f.encode(-x), max_code | 0x80) << f.name << " " << -x;
    EXPECT_EQ(f.decode(f.encode(x)), f.max);
  }
}

TEST_P(Fp8Test, NanStaysNanAndZerosKeepTheirSign) {
  const Format& f = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(f.encode(nan), 0x7F);
  EXPECT_EQ(f.encode(-nan), 0xFF);
  EXPECT_EQ(f.encode(FromBits(0x7F800001)), 0x7F);  // signalling NaN
  EXPECT_TRUE(std::isnan(f.decode(0x7F)));
  EXPECT_TRUE(std::isnan(f.decode(0xFF)));
  EXPECT_EQ(f.encode(0.0f), 0x00);
  EXPECT_EQ(f.encode(-0.0f), 0x80);
  EXPECT_EQ(Bits(f.decode(0x80)), Bits(-0.0f));
  // Below half the smallest subnormal: zero; float subnormals too.
  EXPECT_EQ(f.encode(f.decode(0x01) * 0.5f), 0x00);  // a tie: to the even code, 0
  EXPECT_EQ(f.encode(f.decode(0x01) * 0.5000001f), 0x01);
  EXPECT_EQ(f.encode(FromBits(1)), 0x00);
  EXPECT_EQ(f.encode(-FromBits(1)), 0x80);
}

// A brute-force nearest-code search agrees on floats of every magnitude near the
// format's range, and on random bit patterns.
TEST_P(Fp8Test, MatchesBruteForceNearestCode) {
  const Format& f = GetParam();
  std::mt19937 random(12345);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  const int lowest = -f.bias - f.mantissa_bits - 3, highest = 17;
  for (int exponent = lowest; exponent <= highest; ++exponent) {
    for (int i = 0; i < 200; ++i) {
      const float x = std::ldexp(mantissa(random), exponent) * (i % 2 ? -1.0f : 1.0f);
      ASSERT_EQ(f.encode(x), ReferenceEncode(f, x)) << f.name << " " << x;
    }
  }
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 20000; ++i) {
    const float x = FromBits(bits(random));
    ASSERT_EQ(f.encode(x), ReferenceEncode(f, x)) << f.name << " bits " << Bits(x);
  }
}

// The eight-lane forms compute what the scalar ones do, on a sweep of float bit patterns
// (every 4099th, which hits every exponent with many mantissas) and all 256 codes.
TEST_P(Fp8Test, VectorFormsMatchScalar) {
  const Format& f = GetParam();
  std::vector<float> floats;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099) {
    floats.push_back(FromBits(static_cast<uint32_t>(bits)));
  }
  std::vector<uint8_t> codes(floats.size());
  FloatsToFp8(f.format, floats.data(), static_cast<int64_t>(floats.size()), codes.data());
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(codes[i], f.encode(floats[i])) << f.name << " bits " << Bits(floats[i]);
  }
  std::vector<uint8_t> all(256 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i);
  std::vector<float> decoded(all.size());
  Fp8ToFloats(f.format, all.data(), static_cast<int64_t>(all.size()), decoded.data());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(Bits(decoded[i]), Bits(f.decode(all[i]))) << f.name << " code " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Test, ::testing::Values(kE4M3, kE5M2),
                         [](const ::testing::TestParamInfo<Format>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace oneflow
