#include "oneflow_core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,   DType::kI32,
                                DType::kI64, DType::kU8,  DType::kF8E4M3, DType::kF8E5M2};

constexpr float kInf = std::numeric_limits<float>::infinity();

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(DTypeTest, NamesRoundTrip) {
  const char* expected[] = {"f32", "f16", "bf16", "i32", "i64", "u8", "f8e4m3", "f8e5m2"};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(DTypeName(kAllDTypes[i]), expected[i]);
    absl::StatusOr<DType> parsed = ParseDType(expected[i]);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kAllDTypes[i]);
  }
}

TEST(DTypeTest, ParseRejectsUnknownNameAndListsValidOnes) {
  for (const char* bad : {"f64", "F32", "", "float32"}) {
    absl::StatusOr<DType> parsed = ParseDType(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              std::string("unknown dtype '") + bad +
                  "'; valid: f32, f16, bf16, i32, i64, u8, f8e4m3, f8e5m2");
  }
}

TEST(DTypeTest, ProtoRoundTrip) {
  const proto::DataType expected[] = {proto::DTYPE_F32,     proto::DTYPE_F16,    proto::DTYPE_BF16,
                                      proto::DTYPE_I32,     proto::DTYPE_I64,    proto::DTYPE_U8,
                                      proto::DTYPE_F8_E4M3, proto::DTYPE_F8_E5M2};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(ToProto(kAllDTypes[i]), expected[i]);
    absl::StatusOr<DType> back = FromProto(expected[i]);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, kAllDTypes[i]);
  }
}

TEST(DTypeTest, FromProtoRejectsInvalidAndUnknown) {
  absl::StatusOr<DType> invalid = FromProto(proto::DTYPE_INVALID);
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.status().message(),
            "proto DataType is DTYPE_INVALID (unset); expected a concrete dtype");
  absl::StatusOr<DType> unknown = FromProto(static_cast<proto::DataType>(42));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "unknown proto DataType value 42");
}

TEST(DTypeTest, SizesAndFloatingness) {
  const int64_t sizes[] = {4, 2, 2, 4, 8, 1, 1, 1};
  const bool floating[] = {true, true, true, false, false, false, true, true};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(SizeOf(kAllDTypes[i]), sizes[i]) << DTypeName(kAllDTypes[i]);
    EXPECT_EQ(IsFloating(kAllDTypes[i]), floating[i]) << DTypeName(kAllDTypes[i]);
  }
}

TEST(DTypeTest, KnownBitPatterns) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ToFloat16(1.0f).bits, 0x3C00);
  EXPECT_EQ(ToFloat16(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(ToFloat16(65519.99f).bits, 0x7BFF);
  EXPECT_EQ(ToFloat16(65520.0f).bits, 0x7C00);  // midpoint rounds to even: inf
  EXPECT_EQ(ToFloat16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(ToFloat16(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie with 0: even
  EXPECT_EQ(ToFloat16(-2.0f).bits, 0xC000);
  EXPECT_EQ(ToFloat16(-inf).bits, 0xFC00);
  EXPECT_EQ(ToFloat16(nan).bits, 0x7E00);
  EXPECT_EQ(ToFloat(Float16{0x3555}), 0.333251953125f);
  EXPECT_EQ(ToFloat16(FromBits(0xFFA00000)).bits, 0xFF00);  // NaN: sign, top payload kept
  EXPECT_EQ(BitsOf(ToFloat(Float16{0x7C01})), 0x7FC02000u);  // signaling NaN, quieted

  EXPECT_EQ(ToBFloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(ToBFloat16(FromBits(0x3F808000)).bits, 0x3F80);  // tie, 0x3F80 even
  EXPECT_EQ(ToBFloat16(FromBits(0x3F818000)).bits, 0x3F82);  // tie, 0x3F82 even
  EXPECT_EQ(ToBFloat16(FromBits(0x3F808001)).bits, 0x3F81);  // above the tie
  EXPECT_EQ(ToBFloat16(FromBits(0x3F817FFF)).bits, 0x3F81);  // below the tie
  EXPECT_EQ(ToBFloat16(FromBits(0x7F7FFFFF)).bits, 0x7F80);  // FLT_MAX overflows
  EXPECT_EQ(ToBFloat16(nan).bits, 0x7FC0);
  EXPECT_EQ(ToBFloat16(FromBits(0xFF800001)).bits, 0xFFC0);  // signaling NaN, quieted
  EXPECT_EQ(ToFloat(BFloat16{0xC0A0}), -5.0f);

  EXPECT_EQ(ToFloat8E4M3(1.0f).bits, 0x38);
  EXPECT_EQ(ToFloat8E4M3(448.0f).bits, 0x7E);
  EXPECT_EQ(ToFloat8E4M3(1000.0f).bits, 0x7E);  // saturated
  EXPECT_EQ(ToFloat8E4M3(inf).bits, 0x7E);      // saturated
  EXPECT_EQ(ToFloat8E4M3(-448.0f).bits, 0xFE);
  EXPECT_EQ(ToFloat8E4M3(-inf).bits, 0xFE);
  EXPECT_EQ(ToFloat8E4M3(std::ldexp(1.0f, -9)).bits, 0x01);
  EXPECT_EQ(ToFloat8E4M3(nan).bits, 0x7F);
  EXPECT_TRUE(std::isnan(ToFloat(Float8E4M3{0xFF})));
  EXPECT_EQ(ToFloat(Float8E4M3{0x7E}), 448.0f);

  EXPECT_EQ(ToFloat8E5M2(1.0f).bits, 0x3C);
  EXPECT_EQ(ToFloat8E5M2(57344.0f).bits, 0x7B);
  EXPECT_EQ(ToFloat8E5M2(1e6f).bits, 0x7B);
  EXPECT_EQ(ToFloat8E5M2(-inf).bits, 0xFB);
  EXPECT_EQ(ToFloat8E5M2(std::ldexp(1.0f, -16)).bits, 0x01);
  EXPECT_EQ(ToFloat8E5M2(nan).bits, 0x7E);
  EXPECT_EQ(ToFloat(Float8E5M2{0x7C}), inf);
  EXPECT_EQ(ToFloat(Float8E5M2{0x7B}), 57344.0f);
}

// One storage format seen through its raw bits, so the checks below are written once.
struct Format {
  const char* name;
  int width;            // bits per value
  uint32_t max_finite;  // bits of the largest finite positive value
  uint32_t overflow;    // bits that out-of-range positive values become
  bool saturates;       // inf becomes max_finite
  uint32_t (*narrow)(float);
  float (*widen)(uint32_t);
};

const Format kFormats[] = {
    {"f16", 16, 0x7BFF, 0x7C00, false, [](float v) -> uint32_t { return ToFloat16(v).bits; },
     [](uint32_t b) { return ToFloat(Float16{static_cast<uint16_t>(b)}); }},
    {"bf16", 16, 0x7F7F, 0x7F80, false, [](float v) -> uint32_t { return ToBFloat16(v).bits; },
     [](uint32_t b) { return ToFloat(BFloat16{static_cast<uint16_t>(b)}); }},
    {"e4m3", 8, 0x7E, 0x7E, true, [](float v) -> uint32_t { return ToFloat8E4M3(v).bits; },
     [](uint32_t b) { return ToFloat(Float8E4M3{static_cast<uint8_t>(b)}); }},
    {"e5m2", 8, 0x7B, 0x7B, true, [](float v) -> uint32_t { return ToFloat8E5M2(v).bits; },
     [](uint32_t b) { return ToFloat(Float8E5M2{static_cast<uint8_t>(b)}); }},
};

TEST(DTypeTest, EveryNonNanPatternRoundTrips) {
  for (const Format& f : kFormats) {
    const uint32_t sign = 1u << (f.width - 1);
    for (uint32_t bits = 0; bits < (1u << f.width); ++bits) {
      const float value = f.widen(bits);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(f.widen(f.narrow(value)))) << f.name << " " << bits;
      } else if (std::isinf(value) && f.saturates) {
        EXPECT_EQ(f.narrow(value), f.max_finite | (bits & sign)) << f.name << " " << bits;
      } else {
        ASSERT_EQ(f.narrow(value), bits) << f.name << " value " << value;
      }
    }
  }
}

// For every pair of adjacent finite positive values (0 included), the float midpoint
// rounds to the one with the even pattern, and its float neighbours to the nearer one.
TEST(DTypeTest, MidpointsRoundToNearestEven) {
  for (const Format& f : kFormats) {
    const uint32_t sign = 1u << (f.width - 1);
    for (uint32_t low = 0; low < f.max_finite; ++low) {
      // Exact in float, and written so that it does not overflow near FLT_MAX.
      const float mid = f.widen(low) + (f.widen(low + 1) - f.widen(low)) / 2;
      const uint32_t even = (low & 1) ? low + 1 : low;
      ASSERT_EQ(f.narrow(mid), even) << f.name << " midpoint " << mid;
      ASSERT_EQ(f.narrow(-mid), even | sign) << f.name << " midpoint " << -mid;
      ASSERT_EQ(f.narrow(std::nextafter(mid, 0.0f)), low) << f.name << " below " << mid;
      ASSERT_EQ(f.narrow(std::nextafter(mid, kInf)), low + 1) << f.name << " above " << mid;
    }
  }
}

// Independent reference: the nearest entry of a sorted table of all finite values, ties
// to the even pattern; the value one step past the largest stands for overflow.
uint32_t ReferenceNarrow(const Format& f, const std::vector<double>& table, float value) {
  const uint32_t sign = std::signbit(value) ? 1u << (f.width - 1) : 0u;
  const double magnitude = std::fabs(static_cast<double>(value));
  auto it = std::lower_bound(table.begin(), table.end(), magnitude);
  uint32_t bits;
  if (it == table.end()) {
    bits = f.max_finite + 1;
  } else {
    bits = static_cast<uint32_t>(it - table.begin());
    if (*it != magnitude) {
      const double mid = (*(it - 1) + *it) / 2;
      if (magnitude < mid || (magnitude == mid && (bits & 1))) --bits;
    }
  }
  return (bits > f.max_finite ? f.overflow : bits) | sign;
}

TEST(DTypeTest, NarrowingMatchesReferenceOnFloatSweep) {
  for (const Format& f : kFormats) {
    std::vector<double> table;  // index == bit pattern, for 0 ... max_finite + 1
    for (uint32_t bits = 0; bits <= f.max_finite; ++bits) table.push_back(f.widen(bits));
    table.push_back(2 * table.back() - table[table.size() - 2]);
    // Every 251st float pattern, and every float in the format's own range.
    std::vector<float> inputs;
    for (uint64_t u = 0; u < (1ull << 32); u += 251) inputs.push_back(FromBits(uint32_t(u)));
    // Geometric steps of at least one float ulp, from a quarter of the smallest
    // subnormal to twice the overflow point (or the largest float).
    const double top = 2 * table.back();
    float v = std::max(static_cast<float>(table[1] / 4), std::numeric_limits<float>::denorm_min());
    for (; v < top && std::isfinite(v); v = std::nextafter(v, kInf) * 1.0001f) {
      inputs.push_back(v);
    }
    for (float v : inputs) {
      if (std::isnan(v)) continue;
      ASSERT_EQ(f.narrow(v), ReferenceNarrow(f, table, v)) << f.name << " " << v;
    }
  }
}

TEST(DTypeTest, BulkConversionsMatchScalar) {
  std::vector<float> in;
  for (uint64_t u = 0; u < (1ull << 32); u += 65521) in.push_back(FromBits(uint32_t(u)));
  in.push_back(std::numeric_limits<float>::infinity());
  in.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n = static_cast<int64_t>(in.size());
  ASSERT_GT(n, 65536);
  ASSERT_NE(n % 32, 0);  // exercises the scalar tail after the 32-element blocks
  std::vector<Float16> f16(n);
  std::vector<BFloat16> bf16(n);
  std::vector<Float8E4M3> e4m3(n);
  std::vector<Float8E5M2> e5m2(n);
  ConvertToFloat16(in.data(), n, f16.data());
  ConvertToBFloat16(in.data(), n, bf16.data());
  ConvertToFloat8E4M3(in.data(), n, e4m3.data());
  ConvertToFloat8E5M2(in.data(), n, e5m2.data());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f16[i].bits, ToFloat16(in[i]).bits) << i;
    ASSERT_EQ(bf16[i].bits, ToBFloat16(in[i]).bits) << i;
    ASSERT_EQ(e4m3[i].bits, ToFloat8E4M3(in[i]).bits) << i;
    ASSERT_EQ(e5m2[i].bits, ToFloat8E5M2(in[i]).bits) << i;
  }
  // Widening: every bit pattern of each format (n > 65536), through blocks and a tail.
  for (int64_t i = 0; i < n; ++i) {
    f16[i].bits = bf16[i].bits = static_cast<uint16_t>(i);
    e4m3[i].bits = e5m2[i].bits = static_cast<uint8_t>(i);
  }
  std::vector<float> back(n);
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof(a)) == 0; };
  ConvertToFloat(f16.data(), n, back.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same(back[i], ToFloat(f16[i]))) << i;
  ConvertToFloat(bf16.data(), n, back.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same(back[i], ToFloat(bf16[i]))) << i;
  ConvertToFloat(e4m3.data(), n, back.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same(back[i], ToFloat(e4m3[i]))) << i;
  ConvertToFloat(e5m2.data(), n, back.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same(back[i], ToFloat(e5m2[i]))) << i;
  ConvertToFloat16(in.data(), 0, f16.data());  // n == 0 is a no-op
}

// The bulk bf16 rounding takes 32-float blocks through AVX512_BF16 where the CPU has it,
// an instruction that flushes subnormal inputs to zero: a block with one subnormal among
// normals, a block of subnormals only, NaNs with payloads, infinities, overflow to
// infinity and exact midpoints (ties to even) must all equal the scalar rounding.
TEST(DTypeTest, BulkBf16MatchesScalarAroundSubnormalsNansAndTies) {
  std::vector<float> in;
  for (int i = 0; i < 32; ++i) in.push_back(1.0f + static_cast<float>(i) / 64.0f);  // normals only
  for (int i = 0; i < 32; ++i) in.push_back(i == 17 ? FromBits(0x00012345u) : -3.5f * static_cast<float>(i));
  for (uint32_t i = 0; i < 32; ++i) in.push_back(FromBits((i % 2 ? 0x80000000u : 0u) | (0x007FFFFFu - i * 4099u)));
  for (uint32_t i = 0; i < 32; ++i) {
    const uint32_t patterns[8] = {0x7F800001u, 0xFFC12345u, 0x7F800000u, 0xFF800000u,
                                  0x7F7FFFFFu, 0x3F808000u, 0x3F818000u, 0x00800000u};
    in.push_back(FromBits(patterns[i % 8] + (i / 8) * (i % 8 == 1 ? 1u : 0u)));
  }
  in.push_back(FromBits(0x00000001u));  // the tail: a subnormal after the blocks
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<BFloat16> bulk(n);
  ConvertToBFloat16(in.data(), n, bulk.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bulk[i].bits, ToBFloat16(in[i]).bits) << i << " " << in[i];
  // Subnormals round (not flush): the smallest normal's neighbour below stays non-zero.
  EXPECT_NE(bulk[32 + 17].bits, 0);
  EXPECT_EQ(bulk[64].bits, ToBFloat16(FromBits(0x007FFFFFu)).bits);
  EXPECT_EQ(bulk[64].bits, 0x0080);  // 0x007FFFFF rounds up to the smallest normal bf16
}

}  // namespace
}  // namespace oneflow
