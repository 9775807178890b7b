// The uniform numbers of int4's stochastic rounding: u(i) = LogicalRandom(seed).Uniform(i)
// (oneflow_core/random.h: Philox4x32-10 keyed by the seed, counter = the element's
// logical index, stream 0; u = (first word >> 8) * 2^-24, in [0, 1)), written inline with
// the round keys computed once, as kernels/cpu/philox.h does for dropout (that header is
// private to kernels/cpu). A pure function of (seed, index): the pieces of a tensor
// encoded separately round exactly as the whole would, on any rank.
// codec_test checks it bit for bit against LogicalRandom.
#ifndef KERNELS_COMPRESSION_ROUNDING_NOISE_H_
#define KERNELS_COMPRESSION_ROUNDING_NOISE_H_

#include <cstdint>

#include "kernels/compression/lanes.h"

namespace oneflow {
namespace compression {

class RoundingNoise {
 public:
  explicit RoundingNoise(uint64_t seed) {
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < kRounds; ++round) {
      round_key0_[round] = key0;
      round_key1_[round] = key1;
      key0 += 0x9E3779B9u;  // Philox's Weyl constants
      key1 += 0xBB67AE85u;
    }
  }

  // In [0, 1), a multiple of 2^-24.
  float Uniform(uint64_t index) const {
    uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
    uint32_t c2 = 0, c3 = 0;  // stream 0
    for (int round = 0; round < kRounds; ++round) {
      const uint64_t product0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      const uint64_t product1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ round_key0_[round];
      const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ round_key1_[round];
      c1 = static_cast<uint32_t>(product1);
      c3 = static_cast<uint32_t>(product0);
      c0 = next0;
      c2 = next2;
    }
    return static_cast<float>(c0 >> 8) * (1.0f / 16777216.0f);
  }

#if defined(__GNUC__) && defined(__AVX2__)
  // Uniform(first + lane) for the eight lanes: the same rounds on eight counters at once.
  // AVX2 multiplies 32 x 32 -> 64 bits on the even lanes only, so each product is two
  // multiplies (even lanes, and odd lanes shifted down) put back together.
  F32x8 Uniform8(uint64_t first) const {
    alignas(32) uint32_t low[kLanes], high[kLanes];
    for (int lane = 0; lane < kLanes; ++lane) {
      low[lane] = static_cast<uint32_t>(first + lane);
      high[lane] = static_cast<uint32_t>((first + lane) >> 32);
    }
    __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(low));
    __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(high));
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    const __m256i multiplier0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
    const __m256i multiplier1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
    for (int round = 0; round < kRounds; ++round) {
      __m256i high0, low0, high1, low1;
      MultiplyWide(c0, multiplier0, &high0, &low0);
      MultiplyWide(c2, multiplier1, &high1, &low1);
      const __m256i next0 = _mm256_xor_si256(
          _mm256_xor_si256(high1, c1), _mm256_set1_epi32(static_cast<int>(round_key0_[round])));
      const __m256i next2 = _mm256_xor_si256(
          _mm256_xor_si256(high0, c3), _mm256_set1_epi32(static_cast<int>(round_key1_[round])));
      c1 = low1;
      c3 = low0;
      c0 = next0;
      c2 = next2;
    }
    const __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c0, 8)),
                                   _mm256_set1_ps(1.0f / 16777216.0f));
    return (F32x8)u;
  }
#endif

 private:
#if defined(__GNUC__) && defined(__AVX2__)
  static void MultiplyWide(__m256i a, __m256i b, __m256i* high, __m256i* low) {
    const __m256i even = _mm256_mul_epu32(a, b);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b);
    *high = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *low = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  }
#endif

  static constexpr int kRounds = 10;
  uint32_t round_key0_[kRounds], round_key1_[kRounds];
};

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_ROUNDING_NOISE_H_
