// The Walsh-Hadamard transform against the matrix (H[i][j] = (-1)^popcount(i & j)), the
// vector form against scalar butterflies bit for bit, the normalised rotation as its own
// inverse (powers of two and piecewise lengths), and an outlier spread over the group.
#include "kernels/compression/hadamard.h"

#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(n);
  for (float& value : values) value = normal(random);
  return values;
}

TEST(HadamardTest, MatchesTheMatrix) {
  for (int64_t n = 1; n <= 2048; n *= 2) {
    const std::vector<float> x = RandomFloats(n, static_cast<uint32_t>(n));
    std::vector<float> y = x;
    FastWalshHadamard(y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      double want = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        want += (std::bitset<32>(i & j).count() % 2 ? -1.0 : 1.0) * x[j];
      }
      // log2(n) float additions of values up to sqrt(n) * |x|.
      ASSERT_NEAR(y[i], want, 1e-5 * std::sqrt(static_cast<double>(n)) * 12) << "n " << n;
    }
  }
}

// The vector form is the same butterflies in the same stage order: identical bits.
TEST(HadamardTest, VectorFormIsBitExact) {
  for (int64_t n = 1; n <= 2048; n *= 2) {
    std::vector<float> want = RandomFloats(n, 7);
    std::vector<float> got = want;
    for (int64_t h = 1; h < n; h *= 2) {
      for (int64_t i = 0; i < n; i += 2 * h) {
        for (int64_t j = i; j < i + h; ++j) {
          const float a = want[j], b = want[j + h];
          want[j] = a + b;
          want[j + h] = a - b;
        }
      }
    }
    FastWalshHadamard(got.data(), n);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << "n " << n;
  }
}

TEST(HadamardTest, RotationIsItsOwnInverseAndKeepsTheNorm) {
  for (int64_t n : {0, 1, 2, 3, 7, 31, 32, 100, 127, 128, 129, 1000, 2047, 2048}) {
    const std::vector<float> x = RandomFloats(n, 11);
    std::vector<float> y = x;
    HadamardRotate(y.data(), n);
    double norm_x = 0.0, norm_y = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      norm_x += static_cast<double>(x[i]) * x[i];
      norm_y += static_cast<double>(y[i]) * y[i];
    }
    EXPECT_NEAR(norm_y, norm_x, 1e-5 * norm_x) << "n " << n;
    HadamardRotate(y.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], 2e-6) << "n " << n << " i " << i;
  }
}

// 100 = 64 + 32 + 4: three pieces, each rotated on its own.
TEST(HadamardTest, OtherLengthsRotateInPowerOfTwoPieces) {
  const std::vector<float> x = RandomFloats(100, 3);
  std::vector<float> whole = x;
  HadamardRotate(whole.data(), 100);
  int64_t begin = 0;
  for (int64_t piece : {64, 32, 4}) {
    std::vector<float> part(x.begin() + begin, x.begin() + begin + piece);
    HadamardRotate(part.data(), piece);
    for (int64_t i = 0; i < piece; ++i) EXPECT_EQ(whole[begin + i], part[i]);
    begin += piece;
  }
}

TEST(HadamardTest, SpreadsAnOutlierOverTheGroup) {
  std::vector<float> x(128, 0.0f);
  x[37] = 100.0f;
  HadamardRotate(x.data(), 128);
  for (float value : x) EXPECT_NEAR(std::fabs(value), 100.0f / std::sqrt(128.0f), 1e-4);
}

}  // namespace
}  // namespace oneflow
