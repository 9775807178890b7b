// EncodeMeasured (codec.h): the bytes are Encode's, and the error and signal sums are what
// decoding the bytes and comparing would give, for every codec, with and without the
// rotation, short last groups, stochastic rounding and non-finite groups; plus one case
// worked by hand.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/codec_test_data.h"
#include "oneflow_core/random.h"

namespace oneflow {
namespace {

using codec_testing::Gaussian;

// What metering by decoding gives (the collectives' way before EncodeMeasured; still
// theirs with error feedback): decode the bytes, compare in double.
EncodingErrorSums ByDecoding(const CodecOptions& options, const std::vector<uint8_t>& encoded,
                             const std::vector<float>& x) {
  std::vector<float> decoded(x.size());
  Decode(options, encoded.data(), static_cast<int64_t>(x.size()), decoded.data());
  EncodingErrorSums sums;
  for (size_t i = 0; i < x.size(); ++i) {
    const double difference = static_cast<double>(decoded[i]) - x[i];
    sums.error_sq += difference * difference;
    sums.signal_sq += static_cast<double>(x[i]) * x[i];
  }
  return sums;
}

// Encodes x both ways: the bytes must be equal, the sums equal to rounding.
void ExpectMeasuredMatchesDecoding(const CodecOptions& options, const std::vector<float>& x,
                                   int64_t first_index = 0) {
  const int64_t count = static_cast<int64_t>(x.size());
  std::vector<uint8_t> plain(EncodedBytes(options, count)), measured(EncodedBytes(options, count));
  Encode(options, x.data(), count, plain.data(), first_index);
  EncodingErrorSums sums;
  sums.error_sq = 1.0;  // EncodeMeasured adds to what is there
  sums.signal_sq = 2.0;
  EncodeMeasured(options, x.data(), count, measured.data(), first_index, &sums);
  EXPECT_EQ(plain, measured) << CodecName(options.codec);
  const EncodingErrorSums expected = ByDecoding(options, plain, x);
  ASSERT_GT(expected.error_sq, 0.0) << CodecName(options.codec);
  EXPECT_NEAR(sums.error_sq - 1.0, expected.error_sq, 1e-4 * expected.error_sq)
      << CodecName(options.codec) << " G=" << options.group_size << " hadamard=" << options.hadamard;
  EXPECT_NEAR(sums.signal_sq - 2.0, expected.signal_sq, 1e-5 * expected.signal_sq)
      << CodecName(options.codec);
}

TEST(EncodeMeasuredTest, ByHandInt8) {
  // int8, one group of 4, no rotation: scale = max|x| / 127 = 1 / 127; codes
  // round(x * 127) = 127, round(63.5) = 64 (ties to even), round(-31.75) = -32,
  // round(12.7) = 13; decoded 1, 64/127, -32/127, 13/127; errors 0, 0.5/127, -0.25/127,
  // 0.3/127; error_sq = (0.25 + 0.0625 + 0.09) / 127^2 = 0.4025 / 16129.
  CodecOptions options;
  options.codec = Codec::kInt8;
  options.group_size = 4;
  const std::vector<float> x = {1.0f, 0.5f, -0.25f, 0.1f};
  std::vector<uint8_t> encoded(EncodedBytes(options, 4));
  EncodingErrorSums sums;
  EncodeMeasured(options, x.data(), 4, encoded.data(), 0, &sums);
  EXPECT_NEAR(sums.error_sq, 0.4025 / 16129.0, 1e-9);
  EXPECT_NEAR(sums.signal_sq, 1.0 + 0.25 + 0.0625 + 0.01, 1e-6);
}

TEST(EncodeMeasuredTest, EveryCodecMatchesDecoding) {
  // 1000 elements: groups of 128 leave a short last group of 104 (rotated piecewise).
  const std::vector<float> x = Gaussian(1000, 7);
  for (Codec codec : {Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8, Codec::kInt4}) {
    for (bool hadamard : {false, true}) {
      CodecOptions options;
      options.codec = codec;
      options.group_size = 128;
      options.hadamard = hadamard;
      ExpectMeasuredMatchesDecoding(options, x);
    }
  }
  CodecOptions bf16;
  bf16.codec = Codec::kBf16;
  ExpectMeasuredMatchesDecoding(bf16, x);
}

TEST(EncodeMeasuredTest, LargeGroupsStochasticRoundingOffsetsAndBf16Chunks) {
  const std::vector<float> x = Gaussian(5000, 11);
  CodecOptions rotated;
  rotated.codec = Codec::kInt4;
  rotated.group_size = 2048;
  rotated.hadamard = true;
  rotated.stochastic_rounding = true;
  rotated.seed = 99;
  ExpectMeasuredMatchesDecoding(rotated, x, /*first_index=*/12345);
  // Unrotated groups longer than the read-back chunk (2048).
  CodecOptions long_groups;
  long_groups.codec = Codec::kInt8;
  long_groups.group_size = 4096;
  long_groups.stochastic_rounding = true;
  long_groups.seed = 5;
  ExpectMeasuredMatchesDecoding(long_groups, x, /*first_index=*/3);
  // bf16 is read back in chunks of 2048 elements: 5000 spans three.
  CodecOptions bf16;
  bf16.codec = Codec::kBf16;
  ExpectMeasuredMatchesDecoding(bf16, x);
}

TEST(EncodeMeasuredTest, NonFiniteGroupGivesNaNError) {
  std::vector<float> x = Gaussian(256, 3);
  x[200] = std::numeric_limits<float>::infinity();
  CodecOptions options;
  options.codec = Codec::kInt8;
  options.group_size = 128;
  options.hadamard = true;
  std::vector<uint8_t> encoded(EncodedBytes(options, 256));
  EncodingErrorSums sums;
  EncodeMeasured(options, x.data(), 256, encoded.data(), 0, &sums);
  EXPECT_TRUE(std::isnan(sums.error_sq));
  EXPECT_TRUE(std::isnan(ByDecoding(options, encoded, x).error_sq));
}

}  // namespace
}  // namespace oneflow
