// The Philox4x32-10 blocks of oneflow_core's LogicalRandom (random.h), inline, for
// dropout's mask.
//
// Dropout keeps logical element i iff LogicalRandom::BulkUniform(i) >= rate, and
// BulkUniform(i) uses word i mod 4 of block i / 4 (LogicalRandom::Bits(i / 4)): one
// block serves four consecutive elements. This header computes the same blocks with
// precomputed round keys, one at a time (operator()) and 4 * kGroups at a time on AVX2
// (Blocks(), the words in element order). Blocks keeps each counter word in the low half
// of a 64-bit lane, where one vpmuludq gives the whole 32x32 -> 64-bit product of four
// lanes; the high halves carry garbage that no later step reads. Per four blocks a round
// is two products, two shifts and four xors: about 5 vector instructions per element,
// 0.55 ns per element here against 1.86 for the block-per-element mask this replaced
// (docs/kernels.md).
//
// Blocks512() is Blocks() for CPUs with AVX-512F and VL (Zen 4 here), chosen at run time
// (CpuHasAvx512, cpu_features.h; the build targets x86-64-v3): still 256-bit vectors, but
// a round's two three-way xors are one vpternlogq each, so a round is six instructions
// per four blocks instead of eight, and 32 vector registers hold four to six groups (16
// to 24 blocks) without spills. 0.31-0.34 ns per element against 0.60-0.63 for Blocks()
// in a loop that only stores the words (and 0.31 for the same on 512-bit vectors, which
// Zen 4 splits in two halves: no gain, so the rest of the kernel stays on 256 bits).
// philox_test checks all of them bit for bit against LogicalRandom, 64-bit indices, seeds
// and streams included: the reference draws its masks with LogicalRandom::BulkUniform.
#ifndef KERNELS_CPU_PHILOX_H_
#define KERNELS_CPU_PHILOX_H_

#include <array>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/cpu_features.h"

namespace oneflow {
namespace cpu {

class PhiloxBlocks {
 public:
  // LogicalRandom(seed, stream).
  PhiloxBlocks(uint64_t seed, uint64_t stream)
      : stream_low_(static_cast<uint32_t>(stream)),
        stream_high_(static_cast<uint32_t>(stream >> 32)) {
    // Philox's Weyl sequence: round r uses the key plus r times these constants.
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < kRounds; ++round) {
      round_key0_[round] = key0;
      round_key1_[round] = key1;
#if defined(__AVX2__)
      for (int lane = 0; lane < 4; ++lane) {
        lane_key0_[round][lane] = key0;
        lane_key1_[round][lane] = key1;
      }
#endif
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
#if defined(__AVX2__)
    const uint64_t stream_product = static_cast<uint64_t>(0xCD9E8D57u) * stream_low_;
    const uint32_t a = static_cast<uint32_t>(stream_product >> 32) ^ round_key0_[0];
    const uint64_t a_product = static_cast<uint64_t>(0xD2511F53u) * a;
    for (int lane = 0; lane < 4; ++lane) {
      uniform_.round0_key1[lane] = stream_high_ ^ round_key1_[0];
      uniform_.round1_key0[lane] = static_cast<uint32_t>(stream_product) ^ round_key0_[1];
      uniform_.round1_key1[lane] = static_cast<uint32_t>(a_product >> 32) ^ round_key1_[1];
      uniform_.round2_key1[lane] = static_cast<uint32_t>(a_product) ^ round_key1_[2];
    }
#endif
  }

  // LogicalRandom(seed, stream).Bits(block): counter {block low, block high, stream low,
  // stream high}, 10 rounds.
  std::array<uint32_t, 4> operator()(uint64_t block) const {
    uint32_t c0 = static_cast<uint32_t>(block), c1 = static_cast<uint32_t>(block >> 32);
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
    return {c0, c1, c2, c3};
  }

  // The word of logical element `index` (BulkUniform's): Bits(index / 4)[index % 4].
  uint32_t Word(uint64_t index) const { return (*this)(index / 4)[index % 4]; }

#if defined(__AVX2__)
  // The words of the 4 * kGroups blocks from first_block in element order: words[k]
  // holds those of elements 4 * first_block + 8k .. 4 * first_block + 8k + 7, that is
  // blocks first_block + 2k and first_block + 2k + 1.
  template <int kGroups>
  void Blocks(uint64_t first_block, __m256i words[2 * kGroups]) const {
    const __m256i multiplier0 = _mm256_set1_epi64x(0xD2511F53u);
    const __m256i multiplier1 = _mm256_set1_epi64x(0xCD9E8D57u);
    // Groups of four blocks, interleaved so that each round has independent work for
    // the multipliers. Group g's lanes hold blocks 4g + {0, 2, 1, 3}: that order makes the
    // transposition at the end two unpacks per group, no cross-lane permutes.
    __m256i c0[kGroups], c1[kGroups], c2[kGroups], c3[kGroups];
    const __m256i first = _mm256_set1_epi64x(static_cast<int64_t>(first_block));
    int round = 3;  // The first round left to do.
    if (first_block + 4 * kGroups <= (uint64_t{1} << 32)) {
      // Below 2^32 blocks (2^34 elements: always, in practice) counter words 1 to 3 are
      // the same in every lane (0 and the stream), so half of rounds 0 and 1 and a
      // quarter of round 2 are lane-uniform: precomputed (the constructor), 14 vector
      // instructions per group for the three rounds instead of 24.
      for (int g = 0; g < kGroups; ++g) {
        const __m256i block = GroupBlocks(first, g);
        // Round 0: c0 = a and c1 = lo(M1 * stream low) (uniform), c2 below, c3 = p0.
        const __m256i p0 = _mm256_mul_epu32(block, multiplier0);
        const __m256i c2_after_0 = Xor(_mm256_srli_epi64(p0, 32), uniform_.round0_key1);
        // Round 1: the product of c0 is uniform, that of c2 is not.
        const __m256i p1 = _mm256_mul_epu32(c2_after_0, multiplier1);
        const __m256i c0_after_1 = Xor(_mm256_srli_epi64(p1, 32), uniform_.round1_key0);
        const __m256i c2_after_1 = Xor(p0, uniform_.round1_key1);
        // c1 = p1; c3 = lo(M0 * c0 after round 0), uniform. Round 2:
        const __m256i q0 = _mm256_mul_epu32(c0_after_1, multiplier0);
        const __m256i q1 = _mm256_mul_epu32(c2_after_1, multiplier1);
        c0[g] = Xor(Xor(_mm256_srli_epi64(q1, 32), p1), LaneKey(lane_key0_[2]));
        c2[g] = Xor(_mm256_srli_epi64(q0, 32), uniform_.round2_key1);
        c1[g] = q1;
        c3[g] = q0;
      }
    } else {
      for (int g = 0; g < kGroups; ++g) {
        const __m256i block = GroupBlocks(first, g);
        c0[g] = block;  // The low half is the block's low word.
        c1[g] = _mm256_srli_epi64(block, 32);
        c2[g] = _mm256_set1_epi64x(stream_low_);
        c3[g] = _mm256_set1_epi64x(stream_high_);
      }
      round = 0;
    }
    // Left a loop: unrolled whole (constant bounds) it ran 8% slower here.
    for (; round < kRounds - 1; ++round) Round(round, c0, c1, c2, c3);
    // The last round makes the words as 64-bit lanes {w0, w1} and {w2, w3}: with the
    // halves of each product swapped, w0 = hi(product1) ^ c1 ^ key0 is the low half of
    // swapped ^ (c1 ^ key0 with the high half cleared), and w1 = lo(product1) is
    // already the high half. (The keys' high halves are 0.)
    const __m256i key0 = LaneKey(lane_key0_[kRounds - 1]);
    const __m256i key1 = LaneKey(lane_key1_[kRounds - 1]);
    const __m256i zero = _mm256_setzero_si256();
    for (int g = 0; g < kGroups; ++g) {
      const __m256i product0 = _mm256_mul_epu32(c0[g], multiplier0);
      const __m256i product1 = _mm256_mul_epu32(c2[g], multiplier1);
      const __m256i low = Xor(_mm256_shuffle_epi32(product1, 0xB1),
                              Xor(_mm256_blend_epi32(c1[g], zero, 0xAA), key0));
      const __m256i high = Xor(_mm256_shuffle_epi32(product0, 0xB1),
                               Xor(_mm256_blend_epi32(c3[g], zero, 0xAA), key1));
      // Lanes in block order 0, 2, 1, 3, so two unpacks give {w0, w1, w2, w3} of blocks
      // 0 and 1, and of blocks 2 and 3.
      words[2 * g] = _mm256_unpacklo_epi64(low, high);
      words[2 * g + 1] = _mm256_unpackhi_epi64(low, high);
    }
  }

#if defined(OF_AVX512_CODE)
  // Blocks() on AVX-512 (the header comment): the same words in the same order. Only where
  // CpuHasAvx512(); inlined into callers compiled for AVX-512 (OF_TARGET_AVX512).
  template <int kGroups>
  OF_TARGET_AVX512_INLINE void Blocks512(uint64_t first_block, __m256i words[2 * kGroups]) const {
    const __m256i multiplier0 = _mm256_set1_epi64x(0xD2511F53u);
    const __m256i multiplier1 = _mm256_set1_epi64x(0xCD9E8D57u);
    __m256i c0[kGroups], c1[kGroups], c2[kGroups], c3[kGroups];
    const __m256i first = _mm256_set1_epi64x(static_cast<int64_t>(first_block));
    int round = 3;
    if (first_block + 4 * kGroups <= (uint64_t{1} << 32)) {
      // Rounds 0 to 2 with their lane-uniform parts precomputed, as in Blocks().
      for (int g = 0; g < kGroups; ++g) {
        const __m256i block = GroupBlocks(first, g);
        const __m256i p0 = _mm256_mul_epu32(block, multiplier0);
        const __m256i c2_after_0 = Xor(_mm256_srli_epi64(p0, 32), uniform_.round0_key1);
        const __m256i p1 = _mm256_mul_epu32(c2_after_0, multiplier1);
        const __m256i c0_after_1 = Xor(_mm256_srli_epi64(p1, 32), uniform_.round1_key0);
        const __m256i c2_after_1 = Xor(p0, uniform_.round1_key1);
        const __m256i q0 = _mm256_mul_epu32(c0_after_1, multiplier0);
        const __m256i q1 = _mm256_mul_epu32(c2_after_1, multiplier1);
        c0[g] = Xor3(_mm256_srli_epi64(q1, 32), p1, LaneKey(lane_key0_[2]));
        c2[g] = Xor(_mm256_srli_epi64(q0, 32), uniform_.round2_key1);
        c1[g] = q1;
        c3[g] = q0;
      }
    } else {
      for (int g = 0; g < kGroups; ++g) {
        const __m256i block = GroupBlocks(first, g);
        c0[g] = block;
        c1[g] = _mm256_srli_epi64(block, 32);
        c2[g] = _mm256_set1_epi64x(stream_low_);
        c3[g] = _mm256_set1_epi64x(stream_high_);
      }
      round = 0;
    }
    for (; round < kRounds - 1; ++round) {
      const __m256i key0 = LaneKey(lane_key0_[round]);
      const __m256i key1 = LaneKey(lane_key1_[round]);
      for (int g = 0; g < kGroups; ++g) {
        const __m256i product0 = _mm256_mul_epu32(c0[g], multiplier0);
        const __m256i product1 = _mm256_mul_epu32(c2[g], multiplier1);
        c0[g] = Xor3(_mm256_srli_epi64(product1, 32), c1[g], key0);
        c2[g] = Xor3(_mm256_srli_epi64(product0, 32), c3[g], key1);
        c1[g] = product1;
        c3[g] = product0;
      }
    }
    // The last round as in Blocks(), the xors three-way; c1 and c3 with their high halves
    // cleared (the keys' are 0).
    const __m256i key0 = LaneKey(lane_key0_[kRounds - 1]);
    const __m256i key1 = LaneKey(lane_key1_[kRounds - 1]);
    const __m256i zero = _mm256_setzero_si256();
    for (int g = 0; g < kGroups; ++g) {
      const __m256i product0 = _mm256_mul_epu32(c0[g], multiplier0);
      const __m256i product1 = _mm256_mul_epu32(c2[g], multiplier1);
      const __m256i low =
          Xor3(_mm256_shuffle_epi32(product1, 0xB1), _mm256_blend_epi32(c1[g], zero, 0xAA), key0);
      const __m256i high =
          Xor3(_mm256_shuffle_epi32(product0, 0xB1), _mm256_blend_epi32(c3[g], zero, 0xAA), key1);
      words[2 * g] = _mm256_unpacklo_epi64(low, high);
      words[2 * g + 1] = _mm256_unpackhi_epi64(low, high);
    }
  }
#endif
#endif

 private:
  static constexpr int kRounds = 10;
  uint32_t stream_low_, stream_high_;
  uint32_t round_key0_[kRounds], round_key1_[kRounds];
#if defined(__AVX2__)
  // Group g's blocks, first + 4g + {0, 2, 1, 3}, from `first` in every lane.
  static __m256i GroupBlocks(__m256i first, int g) {
    return _mm256_add_epi64(first, _mm256_setr_epi64x(4 * g, 4 * g + 2, 4 * g + 1, 4 * g + 3));
  }
  // One Philox round on kGroups groups of four blocks.
  template <int kGroups>
  void Round(int round, __m256i (&c0)[kGroups], __m256i (&c1)[kGroups], __m256i (&c2)[kGroups],
             __m256i (&c3)[kGroups]) const {
    const __m256i multiplier0 = _mm256_set1_epi64x(0xD2511F53u);
    const __m256i multiplier1 = _mm256_set1_epi64x(0xCD9E8D57u);
    // Loaded, not broadcast: a broadcast takes a shuffle unit that the shifts need.
    const __m256i key0 = LaneKey(lane_key0_[round]);
    const __m256i key1 = LaneKey(lane_key1_[round]);
    for (int g = 0; g < kGroups; ++g) {
      // vpmuludq reads the low halves only: the garbage above them does not matter.
      const __m256i product0 = _mm256_mul_epu32(c0[g], multiplier0);
      const __m256i product1 = _mm256_mul_epu32(c2[g], multiplier1);
      const __m256i next0 = Xor(Xor(_mm256_srli_epi64(product1, 32), c1[g]), key0);
      const __m256i next2 = Xor(Xor(_mm256_srli_epi64(product0, 32), c3[g]), key1);
      c1[g] = product1;
      c3[g] = product0;
      c0[g] = next0;
      c2[g] = next2;
    }
  }
  static __m256i LaneKey(const uint64_t (&lanes)[4]) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
  }
  static __m256i Xor(__m256i a, __m256i b) { return _mm256_xor_si256(a, b); }
  static __m256i Xor(__m256i a, const uint64_t (&lanes)[4]) { return Xor(a, LaneKey(lanes)); }
#if defined(OF_AVX512_CODE)
  // a ^ b ^ c in one instruction (0x96: the truth table of a three-way xor).
  OF_TARGET_AVX512_INLINE static __m256i Xor3(__m256i a, __m256i b, __m256i c) {
    return _mm256_ternarylogic_epi64(a, b, c, 0x96);
  }
#endif

  // The round keys in every 64-bit lane, for Blocks.
  alignas(32) uint64_t lane_key0_[kRounds][4];
  alignas(32) uint64_t lane_key1_[kRounds][4];
  // Blocks' constants below 2^32 blocks, where a block's counter is {block, 0, stream
  // low, stream high}: round 0 gives every lane c0 = hi(M1 * stream low) ^ key0[0]
  // (= a) and c1 = lo(M1 * stream low), and round 1 gives every lane c3 = lo(M0 * a).
  // In every 64-bit lane:
  struct UniformRounds {
    alignas(32) uint64_t round0_key1[4];  // stream high ^ key1[0]
    alignas(32) uint64_t round1_key0[4];  // lo(M1 * stream low) ^ key0[1]
    alignas(32) uint64_t round1_key1[4];  // hi(M0 * a) ^ key1[1]
    alignas(32) uint64_t round2_key1[4];  // lo(M0 * a) ^ key1[2]
  } uniform_;
#endif
};

// Dropout keeps element i iff LogicalRandom::BulkUniform(i) >= rate. BulkUniform(i) is
// k * 2^-24 with k = word >> 8, so that is k >= rate * 2^24, i.e. k >= ceil(rate * 2^24):
// an integer comparison in the vector loop, exact because scaling by 2^24 is exact in
// double. For 0 <= rate < 1 the threshold is at most 2^24.
inline uint32_t KeepThreshold(double rate) {
  return static_cast<uint32_t>(std::ceil(rate * 16777216.0));
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_PHILOX_H_
