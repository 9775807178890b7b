#include "oneflow_core/random.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"

namespace oneflow {
namespace {

using Block = std::array<uint32_t, 4>;

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // Random123's tests/kat_vectors for philox4x32_10.
  EXPECT_EQ(Philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(LogicalRandomTest, SeedAndStreamSelectIndependentSequences) {
  const LogicalRandom a(7), b(8), c(7, /*stream=*/1);
  int same_seed_and_stream = 0, differs_by_seed = 0, differs_by_stream = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same_seed_and_stream += a.Bits(i) == LogicalRandom(7).Bits(i);
    differs_by_seed += a.Bits(i) != b.Bits(i);
    differs_by_stream += a.Bits(i) != c.Bits(i);
  }
  EXPECT_EQ(same_seed_and_stream, 1000);
  EXPECT_EQ(differs_by_seed, 1000);
  EXPECT_EQ(differs_by_stream, 1000);
  // Index bits above 32 reach the counter.
  EXPECT_NE(a.Bits(5), a.Bits(5 + (int64_t{1} << 32)));
}

TEST(LogicalRandomTest, UniformAndNormalHaveTheRightMoments) {
  const LogicalRandom random(2024);
  const int64_t n = 200000;
  double uniform_sum = 0, uniform_sq = 0, normal_sum = 0, normal_sq = 0;
  float uniform_min = 1, uniform_max = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double u = random.Uniform(i);
    const double z = random.Normal(i);
    uniform_sum += u;
    uniform_sq += u * u;
    normal_sum += z;
    normal_sq += z * z;
    uniform_min = std::min<float>(uniform_min, u);
    uniform_max = std::max<float>(uniform_max, u);
    ASSERT_TRUE(std::isfinite(z));
  }
  EXPECT_GE(uniform_min, 0.0f);
  EXPECT_LT(uniform_max, 1.0f);
  // Standard errors for n = 2e5: mean ~0.0006 (uniform), ~0.0022 (normal).
  EXPECT_NEAR(uniform_sum / n, 0.5, 0.003);
  EXPECT_NEAR(uniform_sq / n - 0.25, 1.0 / 12.0, 0.003);
  EXPECT_NEAR(normal_sum / n, 0.0, 0.01);
  EXPECT_NEAR(normal_sq / n, 1.0, 0.01);
}

// Element i is word i mod 4 of block i / 4, 24 bits of it; a different sequence from
// Uniform's, with the same moments, and still keyed by seed and stream.
TEST(LogicalRandomTest, BulkUniformTakesFourValuesFromEachBlock) {
  const LogicalRandom random(2024, /*stream=*/5);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{4099},
                    (int64_t{1} << 34) + 6, (int64_t{1} << 62) + 3}) {
    EXPECT_EQ(random.BulkUniform(i),
              static_cast<float>(random.Bits(i / 4)[i % 4] >> 8) / 16777216.0f)
        << i;
  }
  const int64_t n = 200000;
  double sum = 0, sq = 0;
  int same_as_uniform = 0, same_seed_other_stream = 0;
  const LogicalRandom other_stream(2024, /*stream=*/6);
  for (int64_t i = 0; i < n; ++i) {
    const double u = random.BulkUniform(i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sq += u * u;
    same_as_uniform += random.BulkUniform(i) == random.Uniform(i);
    same_seed_other_stream += random.BulkUniform(i) == other_stream.BulkUniform(i);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.003);
  EXPECT_NEAR(sq / n - 0.25, 1.0 / 12.0, 0.003);
  // Index 4j is Uniform(j)'s word, not Uniform(4j)'s; 24-bit values collide ~n / 2^24.
  EXPECT_LT(same_as_uniform, 10);
  EXPECT_LT(same_seed_other_stream, 10);
}

// Fills `slice` of a tensor of shape `logical`: FillNormal or FillBlockNormal.
using Fill = std::function<void(const Shape& logical, const TensorSlice& slice, float* out)>;

Fill NormalFill() {
  return [](const Shape& logical, const TensorSlice& slice, float* out) {
    FillNormal(logical, slice, LogicalRandom(/*seed=*/99, /*stream=*/3), 0.5f, 2.0f, out);
  };
}

Fill BlockNormalFill() {
  return [](const Shape& logical, const TensorSlice& slice, float* out) {
    FillBlockNormal(logical, slice, LogicalRandom(/*seed=*/99, /*stream=*/3), out);
  };
}

// Generates the whole tensor on one "device", then each device's slice, and checks that
// every device holds bit-identical values for its part of the logical tensor.
void ExpectValuesIndependentOfLayout(const Shape& logical, const NdSbp& nd_sbp,
                                     const Placement& placement, const Fill& fill) {
  std::vector<float> whole(logical.NumElements());
  fill(logical, TensorSlice::Whole(logical), whole.data());
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const TensorSlice slice = *DeviceSlice(logical, nd_sbp, placement, rank);
    std::vector<float> local(slice.NumElements());
    fill(logical, slice, local.data());
    ForEachContiguousRun(logical, slice, [&](int64_t at, int64_t offset, int64_t length) {
      for (int64_t i = 0; i < length; ++i) {
        ASSERT_EQ(local[at + i], whole[offset + i])
            << "rank " << rank << " slice " << slice.ToString() << " of " << logical.ToString()
            << " under " << nd_sbp.ToString();
      }
    });
  }
}

TEST(LogicalRandomTest, ValuesDoNotDependOnTheSlicing) {
  const Placement line = *Placement::Grid(DeviceType::kCpu, 1, 3);
  const Placement grid = *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2});
  // {7, 10}: slices start and end inside Philox blocks (FillBlockNormal's four values
  // per block); {3, 301}: rows cross BlockNormals' 128-value chunks at odd offsets.
  for (const Fill& fill : {NormalFill(), BlockNormalFill()}) {
    for (const Shape& logical : {Shape{7, 10}, Shape{3, 301}}) {
      for (const NdSbp& nd_sbp : {NdSbp{Sbp::Split(0)}, NdSbp{Sbp::Split(1)}, NdSbp{Sbp::Broadcast()}}) {
        ExpectValuesIndependentOfLayout(logical, nd_sbp, line, fill);
      }
      for (const NdSbp& nd_sbp : {NdSbp{Sbp::Split(0), Sbp::Split(1)},
                                  NdSbp{Sbp::Split(1), Sbp::Split(1)},
                                  NdSbp{Sbp::Broadcast(), Sbp::Split(0)}}) {
        ExpectValuesIndependentOfLayout(logical, nd_sbp, grid, fill);
      }
    }
  }
}

// The documented BlockNormals formula in double, from LogicalRandom::Bits; `radius` gets
// r_p, the bound on |value| the error bound scales with.
double BlockNormalReference(const LogicalRandom& random, int64_t index, double* radius) {
  const Block words = random.Bits(index / 4);
  const int pair = static_cast<int>(index % 4) / 2;
  const double u = ((words[2 * pair] >> 8) + 1.0) / 16777216.0;
  const double v = (words[2 * pair + 1] >> 8) / 16777216.0;
  *radius = std::sqrt(-2.0 * std::log(u));
  return index % 2 == 0 ? *radius * std::cos(2.0 * M_PI * v) : *radius * std::sin(2.0 * M_PI * v);
}

// Every value within 2.7e-7 * r of the double formula (random.h), including 64-bit
// block indices, a seed and a stream with high bits set.
TEST(BlockNormalsTest, MatchTheDoubleFormulaWithinTheDocumentedBound) {
  struct Case {
    uint64_t seed, stream;
    int64_t begin, count;
  };
  for (const Case& c : {Case{2024, 0, 0, 1 << 20}, Case{0xfedcba9876543210, 0x123456789a, 3, 1001},
                        Case{5, 7, (int64_t{1} << 34) - 517, 1030}}) {
    const LogicalRandom random(c.seed, c.stream);
    std::vector<float> values(c.count);
    BlockNormals(random, c.begin, c.count, values.data());
    for (int64_t i = 0; i < c.count; ++i) {
      double radius;
      const double exact = BlockNormalReference(random, c.begin + i, &radius);
      ASSERT_LE(std::abs(values[i] - exact), 2.7e-7 * radius)
          << "seed " << c.seed << " index " << c.begin + i << ": " << values[i] << " vs " << exact;
    }
  }
}

// Any [begin, begin + count) holds the same values as one long call: ranges starting and
// ending at every offset inside a block and a chunk.
TEST(BlockNormalsTest, RangesAgreeWithTheWholeSequence) {
  const LogicalRandom random(11, 4);
  std::vector<float> whole(700);
  BlockNormals(random, 0, 700, whole.data());
  for (int64_t begin = 0; begin < 260; begin += 1) {
    for (int64_t count : {1, 3, 4, 5, 127, 128, 129, 300}) {
      std::vector<float> part(count);
      BlockNormals(random, begin, count, part.data());
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(part[i], whole[begin + i]) << "begin " << begin << " count " << count;
      }
    }
  }
}

// Standard normal CDF.
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// 2^20 values of one fixed seed: moments, the Kolmogorov-Smirnov distance to the normal
// CDF, tail frequencies and correlation between neighbours (which share a Philox block
// or a Box-Muller pair). Tolerances are 5 standard errors (KS: the 0.1% critical value),
// so a generator that is right passes with a wide margin, and this seed is fixed.
TEST(BlockNormalsTest, DistributionIsStandardNormal) {
  const int64_t n = int64_t{1} << 20;
  std::vector<float> values(n);
  BlockNormals(LogicalRandom(/*seed=*/31337, /*stream=*/6), 0, n, values.data());
  double sum = 0, square = 0, lag1 = 0, lag2 = 0;
  int64_t beyond2 = 0, beyond3 = 0, beyond4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = values[i];
    ASSERT_TRUE(std::isfinite(z));
    ASSERT_LE(std::abs(z), 5.77) << "24-bit uniforms bound |z| by sqrt(48 ln 2)";
    sum += z;
    square += z * z;
    if (i + 1 < n) lag1 += z * values[i + 1];
    if (i + 2 < n) lag2 += z * values[i + 2];
    beyond2 += std::abs(z) > 2;
    beyond3 += std::abs(z) > 3;
    beyond4 += std::abs(z) > 4;
  }
  const double root_n = std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(sum / n, 0.0, 5.0 / root_n);
  EXPECT_NEAR(square / n, 1.0, 5.0 * std::sqrt(2.0) / root_n);  // Var(z^2) = 2
  EXPECT_NEAR(lag1 / n, 0.0, 5.0 / root_n);
  EXPECT_NEAR(lag2 / n, 0.0, 5.0 / root_n);
  for (const auto& [count, x] : {std::pair{beyond2, 2.0}, std::pair{beyond3, 3.0}, std::pair{beyond4, 4.0}}) {
    const double p = 2.0 * Phi(-x);
    EXPECT_NEAR(static_cast<double>(count) / n, p, 5.0 * std::sqrt(p * (1 - p) / n)) << "P(|z| > " << x << ")";
  }
  std::sort(values.begin(), values.end());
  double distance = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double cdf = Phi(values[i]);
    distance = std::max({distance, cdf - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - cdf});
  }
  EXPECT_LE(distance, 1.95 / root_n) << "Kolmogorov-Smirnov distance to N(0, 1)";
  EXPECT_GE(distance, 0.1 / root_n) << "suspiciously close: not independent samples?";
}

TEST(LogicalRandomTest, FillUniformRespectsBounds) {
  const Shape logical{1000};
  std::vector<float> values(1000);
  FillUniform(logical, TensorSlice::Whole(logical), LogicalRandom(1), -0.25f, 0.25f,
              values.data());
  for (float v : values) {
    EXPECT_GE(v, -0.25f);
    EXPECT_LT(v, 0.25f);
  }
}

}  // namespace
}  // namespace oneflow
