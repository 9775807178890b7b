// PhiloxWordZero and KeepThreshold against oneflow_core's LogicalRandom, which the
// reference's dropout uses: the same bits for every index, seed and stream, and the same
// keep decisions for every rate.
#include "kernels/cpu/philox.h"

#include <random>

#include "gtest/gtest.h"
#include "oneflow_core/random.h"

namespace oneflow {
namespace cpu {
namespace {

TEST(PhiloxTest, WordZeroIsLogicalRandomsFirstWord) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 4096; ++i) indices.push_back(i);
  for (int64_t i = -64; i < 64; ++i) indices.push_back((int64_t{1} << 32) + i);  // Carry.
  for (int i = 0; i < 4096; ++i) indices.push_back(static_cast<int64_t>(rng() >> 1));
  for (uint64_t seed : {uint64_t{0}, uint64_t{9}, uint64_t{0x123456789ABCDEF0}}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 40) | 7}) {
      const LogicalRandom reference(seed, stream);
      const PhiloxWordZero word(seed, stream);
      for (int64_t index : indices) {
        ASSERT_EQ(word(static_cast<uint64_t>(index)), reference.Bits(index)[0])
            << "seed " << seed << " stream " << stream << " index " << index;
      }
    }
  }
}

#if defined(__AVX2__)
// Eight() is operator() on eight consecutive indices, across the 2^32 carry too.
TEST(PhiloxTest, EightAtATimeIsWordZero) {
  std::mt19937_64 rng(12);
  std::vector<uint64_t> firsts;
  for (uint64_t i = 0; i < 512; ++i) firsts.push_back(i);
  for (int64_t i = -12; i < 4; ++i) firsts.push_back((uint64_t{1} << 32) + i);  // Carry.
  for (int i = 0; i < 512; ++i) firsts.push_back(rng() >> 1);
  for (uint64_t seed : {uint64_t{0}, uint64_t{9}, uint64_t{0x123456789ABCDEF0}}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 40) | 7}) {
      const PhiloxWordZero word(seed, stream);
      for (uint64_t first : firsts) {
        uint32_t words[8];
        word.Eight(first, words);
        for (int k = 0; k < 8; ++k) {
          ASSERT_EQ(words[k], word(first + k))
              << "seed " << seed << " stream " << stream << " index " << first + k;
        }
      }
    }
  }
}
#endif

TEST(PhiloxTest, KeepThresholdDecidesAsUniformAgainstRate) {
  const LogicalRandom reference(5, 2);
  const PhiloxWordZero word(5, 2);
  for (double rate :
       {0.0, 0.1, 0.25, 0.4, 0.5, 3.0 / 16777216.0, 1 - 1.0 / 16777216.0, 0.999999999}) {
    const uint32_t threshold = KeepThreshold(rate);
    int kept = 0;
    for (int64_t i = 0; i < 20000; ++i) {
      const bool keep = (word(static_cast<uint64_t>(i)) >> 8) >= threshold;
      ASSERT_EQ(keep, static_cast<double>(reference.Uniform(i)) >= rate)
          << "rate " << rate << " index " << i;
      kept += keep;
    }
    EXPECT_NEAR(kept / 20000.0, 1 - rate, 0.02) << rate;
  }
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
