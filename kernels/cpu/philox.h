// The first word of oneflow_core's LogicalRandom (random.h), inline, for dropout's mask.
//
// LogicalRandom::Uniform is an out-of-line call computing a whole Philox4x32-10 block,
// about 17 ns of CPU per element here, ten times any other elementwise kernel. This is
// the same function of (seed, stream, logical index) written inline with precomputed
// round keys, so the mask loop vectorizes: about 10 ns per element (the 32x32->64-bit
// multiplies cost several AVX2 instructions each, which caps the gain).
// philox_test checks it bit for bit against LogicalRandom, 64-bit indices, seeds and
// streams included: the reference draws its masks with LogicalRandom.
#ifndef KERNELS_CPU_PHILOX_H_
#define KERNELS_CPU_PHILOX_H_

#include <cmath>
#include <cstdint>

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
