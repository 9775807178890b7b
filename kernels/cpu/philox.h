// The first word of oneflow_core's LogicalRandom (random.h), inline, for dropout's mask.
//
// LogicalRandom::Uniform is an out-of-line call computing a whole Philox4x32-10 block,
// about 17 ns of CPU per element here, ten times any other elementwise kernel. This is
// the same function of (seed, stream, logical index) written inline with precomputed
// round keys: one index at a time (operator(), ~7-11 ns per element: GCC does not
// vectorize it) and eight at a time on AVX2 (Eight(), ~2.5 ns per element). Eight keeps
// each counter word in the low half of a 64-bit lane, where one vpmuludq gives the whole
// 32x32 -> 64-bit product of four lanes; the high halves carry garbage that no later
// step reads. Ten rounds of two products and four xors per element remain, so dropout
// stays bound by this arithmetic, not by memory (docs/kernels.md).
// philox_test checks both bit for bit against LogicalRandom, 64-bit indices, seeds and
// streams included: the reference draws its masks with LogicalRandom.
#ifndef KERNELS_CPU_PHILOX_H_
#define KERNELS_CPU_PHILOX_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace cpu {

class PhiloxWordZero {
 public:
  // LogicalRandom(seed, stream).
  PhiloxWordZero(uint64_t seed, uint64_t stream)
      : stream_low_(static_cast<uint32_t>(stream)),
        stream_high_(static_cast<uint32_t>(stream >> 32)) {
    // Philox's Weyl sequence: round r uses the key plus r times these constants.
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < kRounds; ++round) {
      round_key0_[round] = key0;
      round_key1_[round] = key1;
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
  }

  // LogicalRandom(seed, stream).Bits(index)[0]: counter {index low, index high, stream
  // low, stream high}, 10 rounds.
  uint32_t operator()(uint64_t index) const {
    uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
    uint32_t c2 = stream_low_, c3 = stream_high_;
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
    return c0;
  }

#if defined(__AVX2__)
  // words[k] = (*this)(first + k) for k < 8.
  void Eight(uint64_t first, uint32_t* words) const {
    const __m256i multiplier0 = _mm256_set1_epi64x(0xD2511F53u);
    const __m256i multiplier1 = _mm256_set1_epi64x(0xCD9E8D57u);
    // Two groups of four lanes (indices first..first+3, first+4..first+7), interleaved so
    // that each round has independent work for the multipliers.
    __m256i c0[2], c1[2], c2[2], c3[2];
    for (int g = 0; g < 2; ++g) {
      const uint64_t base = first + 4 * static_cast<uint64_t>(g);
      const __m256i index = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(base)),
                                             _mm256_setr_epi64x(0, 1, 2, 3));
      c0[g] = index;  // The low half is the index's low word.
      c1[g] = _mm256_srli_epi64(index, 32);
      c2[g] = _mm256_set1_epi64x(stream_low_);
      c3[g] = _mm256_set1_epi64x(stream_high_);
    }
    for (int round = 0; round < kRounds; ++round) {
      const __m256i key0 = _mm256_set1_epi64x(round_key0_[round]);
      const __m256i key1 = _mm256_set1_epi64x(round_key1_[round]);
      for (int g = 0; g < 2; ++g) {
        // vpmuludq reads the low halves only: the garbage above them does not matter.
        const __m256i product0 = _mm256_mul_epu32(c0[g], multiplier0);
        const __m256i product1 = _mm256_mul_epu32(c2[g], multiplier1);
        const __m256i next0 =
            _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product1, 32), c1[g]), key0);
        const __m256i next2 =
            _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product0, 32), c3[g]), key1);
        c1[g] = product1;
        c3[g] = product0;
        c0[g] = next0;
        c2[g] = next2;
      }
    }
    uint64_t lanes[8];
    std::memcpy(lanes, &c0[0], sizeof(c0[0]));
    std::memcpy(lanes + 4, &c0[1], sizeof(c0[1]));
    for (int k = 0; k < 8; ++k) words[k] = static_cast<uint32_t>(lanes[k]);
  }
#endif

 private:
  static constexpr int kRounds = 10;
  uint32_t stream_low_, stream_high_;
  uint32_t round_key0_[kRounds], round_key1_[kRounds];
};

// Dropout keeps element i iff LogicalRandom::Uniform(i) >= rate. Uniform(i) is k * 2^-24
// with k = word0 >> 8, so that is k >= rate * 2^24, i.e. k >= ceil(rate * 2^24): an
// integer comparison in the vector loop, exact because scaling by 2^24 is exact in double.
inline uint32_t KeepThreshold(double rate) {
  return static_cast<uint32_t>(std::ceil(rate * 16777216.0));
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_PHILOX_H_
