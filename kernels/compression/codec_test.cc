// The codecs through their public API: error bounds on fixed-seed data, exact round trips
// of representable values, the NaN / Inf / zero rules, wire sizes, stochastic rounding,
// decode-accumulate, and option checks. The measured errors are printed (the docs quote
// them) and asserted against bounds a little above them.
#include "kernels/compression/codec.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compression/fp8.h"
#include "kernels/compression/rounding_noise.h"
#include "kernels/compression/codec_test_data.h"
#include "oneflow_core/random.h"

namespace oneflow {
namespace {

using codec_testing::Gaussian;
using codec_testing::GaussianWithOutliers;

using ::testing::HasSubstr;

constexpr int64_t kCount = 1 << 16;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

CodecOptions Options(Codec codec, int64_t group_size = 128, bool hadamard = false) {
  CodecOptions options;
  options.codec = codec;
  options.group_size = group_size;
  options.hadamard = hadamard;
  return options;
}

std::vector<float> RoundTrip(const CodecOptions& options, const std::vector<float>& x,
                             int64_t first_index = 0) {
  std::vector<uint8_t> encoded(EncodedBytes(options, static_cast<int64_t>(x.size())));
  Encode(options, x.data(), static_cast<int64_t>(x.size()), encoded.data(), first_index);
  std::vector<float> decoded(x.size());
  Decode(options, encoded.data(), static_cast<int64_t>(x.size()), decoded.data());
  return decoded;
}

double Measure(const CodecOptions& options, const std::vector<float>& x, const char* what) {
  const double error = RoundTripRelativeError(options, x.data(), static_cast<int64_t>(x.size()));
  std::printf("relative L2 error %-8s G=%-4lld %-9s on %-22s %.4f%%\n",
              std::string(CodecName(options.codec)).c_str(),
              static_cast<long long>(options.group_size), options.hadamard ? "hadamard" : "",
              what, 100 * error);
  return error;
}

const Codec kScaledCodecs[] = {Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8, Codec::kInt4};
const Codec kAllCompressing[] = {Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8, Codec::kInt4};

TEST(CodecNamesTest, ParseInvertsNameAndListsTheNames) {
  for (Codec codec : {Codec::kNone, Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8, Codec::kInt4}) {
    absl::StatusOr<Codec> parsed = ParseCodec(CodecName(codec));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, codec);
  }
  absl::StatusOr<Codec> bad = ParseCodec("fp4");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown codec 'fp4'; the codecs are none, fp8e4m3, fp8e5m2, int8, int4, bf16");
  // The name the rotated FP8 shipped under says what it is now.
  EXPECT_EQ(ParseCodec("taco_fp8").status().message(),
            "codec 'taco_fp8' is fp8e4m3 with hadamard (its pre-scale cancelled; docs/sbp_and_boxing.md): use "
            "fp8e4m3 and set hadamard; the codecs are none, fp8e4m3, fp8e5m2, int8, int4, bf16");
}

TEST(CodecOptionsTest, InvalidCombinationsNameTheField) {
  CodecOptions options = Options(Codec::kInt8, 0);
  EXPECT_EQ(CheckCodecOptions(options).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckCodecOptions(options).message(), "codec int8: group_size is 0; it must be >= 1");
  options = Options(Codec::kFp8E4M3, 100, /*hadamard=*/true);
  EXPECT_EQ(CheckCodecOptions(options).message(),
            "codec fp8e4m3 with hadamard: group_size is 100; the Walsh-Hadamard transform "
            "needs a power of two in [32, 2048]");
  for (int64_t bad : {16, 4096, 96}) {
    EXPECT_FALSE(CheckCodecOptions(Options(Codec::kInt4, bad, true)).ok()) << bad;
    EXPECT_THAT(CheckCodecOptions(Options(Codec::kFp8E4M3, bad, true)).message(),
                HasSubstr("codec fp8e4m3 with hadamard: group_size is"));
  }
  for (int64_t good : {32, 128, 2048}) {
    EXPECT_TRUE(CheckCodecOptions(Options(Codec::kInt4, good, true)).ok()) << good;
    EXPECT_TRUE(CheckCodecOptions(Options(Codec::kFp8E4M3, good, true)).ok()) << good;
  }
  // Without a rotation any group size >= 1 is fine.
  EXPECT_TRUE(CheckCodecOptions(Options(Codec::kInt4, 5)).ok());
  options = Options(Codec::kFp8E4M3);
  options.stochastic_rounding = true;
  EXPECT_EQ(CheckCodecOptions(options).message(),
            "codec fp8e4m3: stochastic_rounding is set; only int4 and int8 round stochastically");
  options.codec = Codec::kFp8E5M2;
  EXPECT_THAT(CheckCodecOptions(options).message(), HasSubstr("only int4 and int8 round stochastically"));
  options.codec = Codec::kInt4;
  EXPECT_TRUE(CheckCodecOptions(options).ok());
  options.codec = Codec::kInt8;
  EXPECT_TRUE(CheckCodecOptions(options).ok());
  EXPECT_TRUE(CheckCodecOptions(CodecOptions{}).ok());
}

// Scales first (one f32 per group), then one byte per element or a nibble.
TEST(CodecWireTest, EncodedBytesArePayloadPlusScales) {
  for (int64_t count : {0, 1, 2, 127, 128, 129, 1000, 4097}) {
    const int64_t groups = (count + 127) / 128;
    EXPECT_EQ(EncodedBytes(Options(Codec::kNone), count), 4 * count);
    EXPECT_EQ(EncodedBytes(Options(Codec::kFp8E4M3), count), count + 4 * groups);
    EXPECT_EQ(EncodedBytes(Options(Codec::kFp8E5M2), count), count + 4 * groups);
    EXPECT_EQ(EncodedBytes(Options(Codec::kInt8, 128, true), count), count + 4 * groups);
    EXPECT_EQ(EncodedBytes(Options(Codec::kInt4), count), (count + 1) / 2 + 4 * groups);
    EXPECT_EQ(EncodedBytes(Options(Codec::kFp8E4M3, 128, true), count), count + 4 * groups);
  }
  // The layout itself: group 1's scale is bytes 4..7, element 130's int8 code byte 8 + 130.
  std::vector<float> x(200, 0.0f);
  x[130] = -3.0f;
  x[131] = 127.0f;
  const CodecOptions int8 = Options(Codec::kInt8);
  std::vector<uint8_t> encoded(EncodedBytes(int8, 200));
  Encode(int8, x.data(), 200, encoded.data());
  float scale;
  std::memcpy(&scale, encoded.data() + 4, 4);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(static_cast<int8_t>(encoded[8 + 130]), -3);
  EXPECT_EQ(static_cast<int8_t>(encoded[8 + 131]), 127);
  // int4: element 131 is the high nibble of payload byte 65.
  const CodecOptions int4 = Options(Codec::kInt4);
  x[131] = 7.0f;
  encoded.assign(EncodedBytes(int4, 200), 0xAA);
  Encode(int4, x.data(), 200, encoded.data());
  EXPECT_EQ(encoded[8 + 65], 0x7D);  // high nibble 7, low nibble -3 = 0xD
}

TEST(CodecErrorTest, Fp8E4M3OnGaussianIsWithinTwoPointSixPercent) {
  const std::vector<float> x = Gaussian(kCount);
  EXPECT_LE(Measure(Options(Codec::kFp8E4M3), x, "gaussian"), 0.026);
  EXPECT_LE(Measure(Options(Codec::kFp8E4M3, 128, true), x, "gaussian"), 0.026);
  EXPECT_LE(Measure(Options(Codec::kFp8E5M2), x, "gaussian"), 0.052);
}

// Outliers set an int4 group's scale alone and wipe out the rest of the group; the
// rotation spreads them. On 2^18 elements the error falls 1.69x (9.94% -> 5.89%): less
// than the 2x asked for (and than REFERENCES.md's 32.7% -> 16.9%, 1.93x, measured on
// other data). The ratio is the recipe's, not this code's: a numeric model of the same
// recipe gives 1.5-1.9x depending on the draw (the outliers' magnitudes), and even a
// per-group search for the best clipping gives 1.7-2.1x. Asserted: at least 1.6x.
TEST(CodecErrorTest, HadamardCutsInt4ErrorWithOutliers) {
  const std::vector<float> x = GaussianWithOutliers(4 * kCount);
  const double plain = Measure(Options(Codec::kInt4), x, "gaussian+0.1% x100");
  const double rotated = Measure(Options(Codec::kInt4, 128, true), x, "gaussian+0.1% x100");
  EXPECT_LE(rotated * 1.6, plain);
  EXPECT_LE(rotated, 0.06);
  EXPECT_LE(Measure(Options(Codec::kInt4), Gaussian(kCount), "gaussian"), 0.12);
  EXPECT_LE(Measure(Options(Codec::kInt4, 128, true), Gaussian(kCount), "gaussian"), 0.12);
}

TEST(CodecErrorTest, Int8WithOutliersAndHadamardIsWithinOnePercent) {
  const std::vector<float> x = GaussianWithOutliers(kCount);
  const double plain = Measure(Options(Codec::kInt8), x, "gaussian+0.1% x100");
  const double rotated = Measure(Options(Codec::kInt8, 128, true), x, "gaussian+0.1% x100");
  EXPECT_LE(rotated, 0.01);
  EXPECT_LT(rotated, plain);
  EXPECT_LE(Measure(Options(Codec::kInt8), Gaussian(kCount), "gaussian"), 0.01);
  // The other codecs on the same data, for the docs' table.
  Measure(Options(Codec::kFp8E4M3), x, "gaussian+0.1% x100");
  Measure(Options(Codec::kFp8E4M3, 128, true), x, "gaussian+0.1% x100");
}

// A last group shorter than G (rotated piecewise) is as good as a whole one.
TEST(CodecErrorTest, ShortLastGroupsKeepTheBound) {
  for (int64_t count : {1, 5, 33, 100, 1000, 1001}) {
    const std::vector<float> x = Gaussian(count, 77);
    EXPECT_LE(RoundTripRelativeError(Options(Codec::kFp8E4M3, 128, true), x.data(), count), 0.04)
        << count;
    EXPECT_LE(RoundTripRelativeError(Options(Codec::kInt8, 128, true), x.data(), count), 0.015)
        << count;
  }
}

// Groups whose values are exactly representable (FP8 values, or integers up to Q, times a
// power of two) with the format's largest value present decode exactly: scale = 2^k.
TEST(CodecExactTest, RepresentableValuesRoundTripExactly) {
  const std::vector<float> normal = Gaussian(1024, 5);
  struct Case {
    Codec codec;
    float (*representable)(float);
    float max;
  };
  const Case cases[] = {
      {Codec::kFp8E4M3, [](float v) { return E4M3ToFloat(FloatToE4M3(v)); }, 448.0f},
      {Codec::kFp8E5M2, [](float v) { return E5M2ToFloat(FloatToE5M2(v)); }, 57344.0f},
      {Codec::kInt8, [](float v) { return std::nearbyint(v); }, 127.0f},
      {Codec::kInt4, [](float v) { return std::nearbyint(v); }, 7.0f},
  };
  for (const Case& c : cases) {
    for (int64_t group_size : {5, 128}) {
      std::vector<float> x(1024);
      for (int64_t i = 0; i < 1024; ++i) {
        const int64_t group = i / group_size;
        const float power = std::ldexp(1.0f, static_cast<int>(group % 40) - 20);
        float value = c.representable(std::fmax(std::fmin(normal[i] * c.max / 3, c.max), -c.max));
        if (i % group_size == 0) value = group % 2 ? c.max : -c.max;  // the group's max
        x[i] = value * power;
      }
      const std::vector<float> decoded = RoundTrip(Options(c.codec, group_size), x);
      for (int64_t i = 0; i < 1024; ++i) {
        ASSERT_EQ(decoded[i], x[i]) << CodecName(c.codec) << " G=" << group_size << " i " << i;
      }
    }
  }
}

TEST(CodecSpecialValuesTest, ZeroGroupsDecodeToExactZeros) {
  std::vector<float> x(300, 0.0f);
  for (int64_t i = 200; i < 300; ++i) x[i] = 1e-31f * ((i % 3) - 1);  // below 2^-100
  for (Codec codec : kAllCompressing) {
    for (bool hadamard : {false, true}) {
      const std::vector<float> decoded = RoundTrip(Options(codec, 128, hadamard), x);
      for (int64_t i = 0; i < 300; ++i) {
        ASSERT_EQ(decoded[i], 0.0f) << CodecName(codec) << " " << hadamard << " i " << i;
      }
    }
  }
}

// A NaN or an Inf makes its whole group decode to NaN; the other groups are untouched.
TEST(CodecSpecialValuesTest, NonFiniteValuesPoisonTheirGroupOnly) {
  const std::vector<float> clean = Gaussian(512, 9);
  for (Codec codec : kAllCompressing) {
    for (bool hadamard : {false, true}) {
      const CodecOptions options = Options(codec, 128, hadamard);
      const std::vector<float> reference = RoundTrip(options, clean);
      for (float bad : {kNaN, -kNaN, kInf, -kInf}) {
        std::vector<float> x = clean;
        x[130] = bad;
        const std::vector<float> decoded = RoundTrip(options, x);
        for (int64_t i = 0; i < 512; ++i) {
          if (i >= 128 && i < 256) {
            ASSERT_TRUE(std::isnan(decoded[i])) << CodecName(codec) << " " << bad << " i " << i;
          } else {
            ASSERT_EQ(decoded[i], reference[i]) << CodecName(codec) << " " << bad << " i " << i;
          }
        }
      }
    }
  }
}

// Finite groups never decode to Inf, however close to FLT_MAX, and nothing decodes above
// its group's largest magnitude.
TEST(CodecSpecialValuesTest, LargeFiniteValuesSaturateInsteadOfOverflowing) {
  std::vector<float> x = Gaussian(256, 4);
  for (float& value : x) value *= 1e37f;
  x[3] = FLT_MAX;
  x[200] = -FLT_MAX;
  x[201] = std::nextafter(FLT_MAX, 0.0f);
  for (Codec codec : kScaledCodecs) {
    const std::vector<float> decoded = RoundTrip(Options(codec), x);
    for (int64_t i = 0; i < 256; ++i) {
      ASSERT_TRUE(std::isfinite(decoded[i])) << CodecName(codec) << " i " << i;
      ASSERT_LE(std::fabs(decoded[i]), FLT_MAX);
    }
    if (codec != Codec::kInt4) {
      EXPECT_NEAR(decoded[3], FLT_MAX, FLT_MAX * 1e-6);
    }
  }
}

TEST(CodecDecodeTest, DecodeAccumulateAddsTheDecodedValues) {
  const std::vector<float> x = Gaussian(1000, 1);
  const std::vector<float> base = Gaussian(1000, 2);
  for (Codec codec : {Codec::kNone, Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8, Codec::kInt4}) {
    for (bool hadamard : {false, true}) {
      const CodecOptions options = Options(codec, 128, hadamard);
      std::vector<uint8_t> encoded(EncodedBytes(options, 1000));
      Encode(options, x.data(), 1000, encoded.data());
      std::vector<float> decoded(1000), accumulated = base;
      Decode(options, encoded.data(), 1000, decoded.data());
      DecodeAccumulate(options, encoded.data(), 1000, accumulated.data());
      for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(accumulated[i], base[i] + decoded[i]);
    }
  }
}

// Same input, same bytes: twice, and from and into buffers at odd addresses.
TEST(CodecDecodeTest, EncodingIsDeterministicAndAlignmentFree) {
  const std::vector<float> x = Gaussian(1001, 3);
  for (Codec codec : kAllCompressing) {
    const CodecOptions options = Options(codec, 128, codec != Codec::kFp8E5M2);
    const int64_t bytes = EncodedBytes(options, 1000);
    std::vector<uint8_t> a(bytes), b(bytes + 3);
    Encode(options, x.data(), 1000, a.data());
    std::vector<float> shifted(x.begin() + 1, x.end());  // x[1..] copied
    std::vector<float> unaligned(1001);
    std::memcpy(reinterpret_cast<uint8_t*>(unaligned.data()) + 2, x.data(), 1000 * 4);
    Encode(options, reinterpret_cast<const float*>(reinterpret_cast<uint8_t*>(unaligned.data()) + 2),
           1000, b.data() + 3);
    ASSERT_EQ(std::memcmp(a.data(), b.data() + 3, bytes), 0) << CodecName(codec);
    std::vector<float> decoded_a(1000), decoded_b(1001);
    Decode(options, a.data(), 1000, decoded_a.data());
    Decode(options, b.data() + 3, 1000,
           reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(decoded_b.data()) + 2));
    ASSERT_EQ(std::memcmp(decoded_a.data(), reinterpret_cast<uint8_t*>(decoded_b.data()) + 2,
                          1000 * 4),
              0)
        << CodecName(codec);
  }
}

TEST(CodecStochasticTest, NoiseIsLogicalRandomsUniform) {
  for (uint64_t seed : {0ull, 1ull, 0x123456789ABCDEFull}) {
    const compression::RoundingNoise noise(seed);
    const LogicalRandom random(seed);
    for (int64_t index : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 33,
                          (int64_t{1} << 62) + 5}) {
      ASSERT_EQ(noise.Uniform(index), random.Uniform(index)) << seed << " " << index;
    }
#if defined(__GNUC__) && defined(__AVX2__)
    // The eight-lane form, across a carry into the counter's high word too.
    for (uint64_t first : {0ull, 12345ull, 0xFFFFFFFCull, (1ull << 62) + 3}) {
      const F32x8 lanes = noise.Uniform8(first);
      for (int lane = 0; lane < 8; ++lane) {
        ASSERT_EQ(lanes[lane], random.Uniform(static_cast<int64_t>(first + lane))) << first;
      }
    }
#endif
  }
}

// Stochastic rounding is unbiased: averaged over seeds, decoded values approach x, where
// nearest rounding keeps its bias; every single encoding is within one step. int4 and
// int8 alike (x spans the group's range, so the step is max / 7 or max / 127).
TEST(CodecStochasticTest, StochasticRoundingIsUnbiased) {
  for (const auto& [codec, max_code] : {std::pair{Codec::kInt4, 7.0f}, std::pair{Codec::kInt8, 127.0f}}) {
    std::vector<float> x(128);
    // max |x| = max_code, so one code step is 1.0; the others fall between the steps.
    for (int64_t i = 0; i < 128; ++i) x[i] = (static_cast<float>(i) - 63.5f) * (max_code / 64) * 0.99f;
    x[0] = -max_code;
    x[127] = max_code;
    CodecOptions options = Options(codec);
    options.stochastic_rounding = true;
    std::vector<double> mean(128, 0.0);
    constexpr int kSeeds = 400;
    for (int seed = 0; seed < kSeeds; ++seed) {
      options.seed = seed;
      const std::vector<float> decoded = RoundTrip(options, x);
      for (int64_t i = 0; i < 128; ++i) {
        ASSERT_LE(std::fabs(decoded[i] - x[i]), 1.0f) << CodecName(codec) << " " << i;
        mean[i] += decoded[i] / kSeeds;
      }
    }
    double bias = 0.0, nearest_bias = 0.0;
    const std::vector<float> nearest = RoundTrip(Options(codec), x);
    for (int64_t i = 0; i < 128; ++i) {
      bias += std::fabs(mean[i] - x[i]) / 128;
      nearest_bias += std::fabs(nearest[i] - x[i]) / 128;
    }
    // Nearest's mean error is 0.25 (int4) and 0.23 (int8) of a step for these x; 400
    // draws of a Bernoulli leave ~0.02.
    EXPECT_LT(bias, 0.05) << CodecName(codec);
    EXPECT_GT(nearest_bias, 0.2) << CodecName(codec);
  }
}

// Pieces of a tensor encoded separately (at group boundaries, with their first_index)
// give the bytes of the whole: the noise is keyed by logical index.
TEST(CodecStochasticTest, PiecesRoundAsTheWhole) {
  const std::vector<float> x = Gaussian(1024, 8);
  CodecOptions options = Options(Codec::kInt4, 128, /*hadamard=*/true);
  options.stochastic_rounding = true;
  options.seed = 99;
  const std::vector<float> whole = RoundTrip(options, x);
  const std::vector<float> head(x.begin(), x.begin() + 512), tail(x.begin() + 512, x.end());
  const std::vector<float> head_decoded = RoundTrip(options, head, 0);
  const std::vector<float> tail_decoded = RoundTrip(options, tail, 512);
  for (int64_t i = 0; i < 512; ++i) {
    ASSERT_EQ(whole[i], head_decoded[i]);
    ASSERT_EQ(whole[512 + i], tail_decoded[i]);
  }
  // A different first_index is a different draw.
  EXPECT_NE(RoundTrip(options, tail, 0), tail_decoded);
  // And the error stays int4's.
  EXPECT_LE(RoundTripRelativeError(options, x.data(), 1024), 0.2);
}

TEST(CodecRoundTripTest, RelativeErrorIsZeroForZeroAndExactForNone) {
  const std::vector<float> zeros(100, 0.0f);
  EXPECT_EQ(RoundTripRelativeError(Options(Codec::kInt4), zeros.data(), 100), 0.0);
  EXPECT_EQ(RoundTripRelativeError(Options(Codec::kInt4), zeros.data(), 0), 0.0);
  const std::vector<float> x = Gaussian(100, 1);
  EXPECT_EQ(RoundTripRelativeError(Options(Codec::kNone), x.data(), 100), 0.0);
  EXPECT_EQ(RoundTrip(Options(Codec::kNone), x), x);
}

}  // namespace
}  // namespace oneflow
