// The bf16 wire codec (bf16_codec.h) through the codec API: every element decodes to the
// `cast` op's bf16 rounding of it (oneflow_core/dtype.h, round to nearest even), so the
// relative error is at most 2^-8 per element; two bytes an element and no header; NaN and
// Inf stay in their own element; decode-accumulate adds; any byte offset works; hadamard
// is refused.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/compression/codec.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/random.h"

namespace oneflow {
namespace {

CodecOptions Bf16() {
  CodecOptions options;
  options.codec = Codec::kBf16;
  options.group_size = 1;
  return options;
}

std::vector<float> Gaussian(int64_t count) {
  std::vector<float> values(count);
  BlockNormals(LogicalRandom(7), 0, count, values.data());
  return values;
}

std::vector<float> RoundTrip(const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> encoded(EncodedBytes(Bf16(), n));
  Encode(Bf16(), x.data(), n, encoded.data());
  std::vector<float> decoded(n);
  Decode(Bf16(), encoded.data(), n, decoded.data());
  return decoded;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(Bf16CodecTest, NameAndWireBytes) {
  EXPECT_EQ(CodecName(Codec::kBf16), "bf16");
  EXPECT_EQ(*ParseCodec("bf16"), Codec::kBf16);
  EXPECT_EQ(EncodedBytes(Bf16(), 0), 0);
  EXPECT_EQ(EncodedBytes(Bf16(), 1), 2);
  EXPECT_EQ(EncodedBytes(Bf16(), 3001), 6002);
  // The group size is not used: no scales whatever it is.
  CodecOptions grouped = Bf16();
  grouped.group_size = 128;
  EXPECT_EQ(EncodedBytes(grouped, 3001), 6002);
}

// Each element decodes to the scalar round-to-nearest-even of dtype.h (a tail shorter
// than the SIMD width and a count above the codec's chunk included), and the error is
// within half a bf16 ulp: 2^-8 relative (8 significant bits).
TEST(Bf16CodecTest, DecodesToTheCastOpsRoundingOfEachElement) {
  const std::vector<float> x = Gaussian(5003);
  const std::vector<float> decoded = RoundTrip(x);
  double error = 0, norm = 0, worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(Bits(decoded[i]), Bits(ToFloat(ToBFloat16(x[i])))) << "element " << i;
    const double difference = static_cast<double>(decoded[i]) - x[i];
    error += difference * difference;
    norm += static_cast<double>(x[i]) * x[i];
    if (x[i] != 0) worst = std::max(worst, std::abs(difference / x[i]));
  }
  EXPECT_LE(worst, std::ldexp(1.0, -8));
  const double relative = std::sqrt(error / norm);
  EXPECT_LE(relative, std::ldexp(1.0, -8));
  EXPECT_GT(relative, 0.0);
  EXPECT_DOUBLE_EQ(RoundTripRelativeError(Bf16(), x.data(), static_cast<int64_t>(x.size())), relative);
  std::printf("bf16 wire on Gaussian: relative L2 error %.3g, worst element %.3g\n", relative, worst);
  // Ties go to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  const std::vector<float> ties = RoundTrip({1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)});
  EXPECT_EQ(ties[0], 1.0f);
  EXPECT_EQ(ties[1], 1.0f + std::ldexp(1.0f, -6));
}

TEST(Bf16CodecTest, NonFiniteValuesStayInTheirOwnElement) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> decoded =
      RoundTrip({1.5f, std::numeric_limits<float>::quiet_NaN(), -inf, inf, -2.25f, 3.4e38f, 0.0f});
  EXPECT_EQ(decoded[0], 1.5f);
  EXPECT_TRUE(std::isnan(decoded[1]));
  EXPECT_EQ(decoded[2], -inf);
  EXPECT_EQ(decoded[3], inf);
  EXPECT_EQ(decoded[4], -2.25f);
  EXPECT_EQ(decoded[5], inf);  // beyond bf16's largest finite (3.3895e38): IEEE rounding
  EXPECT_EQ(decoded[6], 0.0f);
}

TEST(Bf16CodecTest, DecodeAccumulateAddsAndAnyOffsetWorks) {
  const std::vector<float> x = Gaussian(1500);
  const int64_t n = static_cast<int64_t>(x.size());
  // Encoded at an odd byte offset, as inside a packed message.
  std::vector<uint8_t> buffer(EncodedBytes(Bf16(), n) + 1);
  Encode(Bf16(), x.data(), n, buffer.data() + 1);
  std::vector<float> accumulator(n);
  for (int64_t i = 0; i < n; ++i) accumulator[i] = static_cast<float>(i);
  DecodeAccumulate(Bf16(), buffer.data() + 1, n, accumulator.data());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(accumulator[i], static_cast<float>(i) + ToFloat(ToBFloat16(x[i]))) << "element " << i;
  }
}

TEST(Bf16CodecTest, HadamardIsRefused) {
  CodecOptions options = Bf16();
  EXPECT_TRUE(CheckCodecOptions(options).ok());
  options.hadamard = true;
  EXPECT_EQ(CheckCodecOptions(options),
            absl::InvalidArgumentError(
                "codec bf16: hadamard is set; bf16 rounds each element by itself and has no groups to rotate"));
  options = Bf16();
  options.stochastic_rounding = true;
  EXPECT_EQ(CheckCodecOptions(options).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow
