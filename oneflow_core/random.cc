#include "oneflow_core/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "oneflow_core/fast_math.h"

namespace oneflow {
namespace {

// Philox4x32 constants from the paper: round multipliers and Weyl key increments.
constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;
constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;

constexpr int kRounds = 10;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key) {
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMultiplier0, counter[0], &hi0, &lo0);
    MulHiLo(kMultiplier1, counter[2], &hi1, &lo1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

std::array<uint32_t, 4> LogicalRandom::Bits(int64_t index) const {
  const uint64_t i = static_cast<uint64_t>(index);
  return Philox4x32_10(
      {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(stream_),
       static_cast<uint32_t>(stream_ >> 32)},
      {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
}

float LogicalRandom::Uniform(int64_t index) const {
  return static_cast<float>(Bits(index)[0] >> 8) * kTwoToMinus24;
}

float LogicalRandom::BulkUniform(int64_t index) const {
  const uint64_t i = static_cast<uint64_t>(index);
  return static_cast<float>(Bits(static_cast<int64_t>(i / 4))[i % 4] >> 8) * kTwoToMinus24;
}

float LogicalRandom::Normal(int64_t index) const {
  const std::array<uint32_t, 4> bits = Bits(index);
  // u1 in (0, 1] so the logarithm is finite; u2 in [0, 1).
  const double u1 = (static_cast<double>(bits[0] >> 8) + 1.0) * kTwoToMinus24;
  const double u2 = static_cast<double>(bits[1] >> 8) * kTwoToMinus24;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

void FillUniform(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                 float low, float high, float* out) {
  const float scale = high - low;
  ForEachContiguousRun(logical, slice, [&](int64_t local, int64_t offset, int64_t length) {
    for (int64_t i = 0; i < length; ++i) out[local + i] = low + scale * random.Uniform(offset + i);
  });
}

void FillNormal(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                float mean, float stddev, float* out) {
  ForEachContiguousRun(logical, slice, [&](int64_t local, int64_t offset, int64_t length) {
    for (int64_t i = 0; i < length; ++i) out[local + i] = mean + stddev * random.Normal(offset + i);
  });
}

namespace {

// BlockNormals computes whole chunks of kChunkBlocks consecutive blocks. Every loop in
// NormalChunk has this fixed trip count, a multiple of the vector width, so GCC
// vectorizes each with no scalar remainder (-O2's cost model vectorizes only such
// loops): every value goes through the same instructions wherever its block falls in a
// chunk, which keeps the values independent of where a device's slice starts. 32 blocks
// (128 values, 512 bytes) was the fastest of 8/16/32/64 here.
constexpr int kChunkBlocks = 32;
constexpr int64_t kChunkValues = 4 * kChunkBlocks;

// Philox's key schedule and the counter's stream half, computed once per call.
struct PhiloxKeys {
  explicit PhiloxKeys(const LogicalRandom& random)
      : stream_low(static_cast<uint32_t>(random.stream())),
        stream_high(static_cast<uint32_t>(random.stream() >> 32)) {
    uint32_t key0 = static_cast<uint32_t>(random.seed());
    uint32_t key1 = static_cast<uint32_t>(random.seed() >> 32);
    for (int round = 0; round < kRounds; ++round) {
      round_key0[round] = key0;
      round_key1[round] = key1;
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
  }
  uint32_t stream_low, stream_high;
  uint32_t round_key0[kRounds], round_key1[kRounds];
};

// The 4 * kChunkBlocks values of blocks [first_block, first_block + kChunkBlocks):
// Philox4x32_10 on a structure of arrays (one lane per block), then Box-Muller.
void NormalChunk(const PhiloxKeys& keys, uint64_t first_block, float* out) {
  uint32_t c0[kChunkBlocks], c1[kChunkBlocks], c2[kChunkBlocks], c3[kChunkBlocks];
  for (int j = 0; j < kChunkBlocks; ++j) {
    const uint64_t block = first_block + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(block);
    c1[j] = static_cast<uint32_t>(block >> 32);
    c2[j] = keys.stream_low;
    c3[j] = keys.stream_high;
  }
  for (int round = 0; round < kRounds; ++round) {
    const uint32_t key0 = keys.round_key0[round], key1 = keys.round_key1[round];
    for (int j = 0; j < kChunkBlocks; ++j) {
      const uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * c0[j];
      const uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * c2[j];
      const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1[j] ^ key0;
      const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3[j] ^ key1;
      c1[j] = static_cast<uint32_t>(product1);
      c3[j] = static_cast<uint32_t>(product0);
      c0[j] = next0;
      c2[j] = next2;
    }
  }
  for (int j = 0; j < kChunkBlocks; ++j) {
    // 24-bit integers convert to float exactly; u in (0, 1] keeps the logarithm finite.
    const float u0 = static_cast<float>(static_cast<int32_t>((c0[j] >> 8) + 1)) * kTwoToMinus24;
    const float u1 = static_cast<float>(static_cast<int32_t>((c2[j] >> 8) + 1)) * kTwoToMinus24;
    // The library's copts have -fno-math-errno: otherwise sqrt keeps an errno branch
    // and this loop stays scalar (3x slower). The argument is never negative.
    const float r0 = std::sqrt(-2.0f * FastLog(u0));
    const float r1 = std::sqrt(-2.0f * FastLog(u1));
    float sin0, cos0, sin1, cos1;
    FastSinCosTurns(c1[j] >> 8, &sin0, &cos0);
    FastSinCosTurns(c3[j] >> 8, &sin1, &cos1);
    out[4 * j] = r0 * cos0;
    out[4 * j + 1] = r0 * sin0;
    out[4 * j + 2] = r1 * cos1;
    out[4 * j + 3] = r1 * sin1;
  }
}

}  // namespace

void BlockNormals(const LogicalRandom& random, int64_t begin, int64_t count, float* out) {
  const PhiloxKeys keys(random);
  uint64_t block = static_cast<uint64_t>(begin) / 4;
  int64_t skip = begin % 4;  // values of the first block before `begin`
  alignas(32) float scratch[kChunkValues];
  while (count > 0) {
    // Whole chunks go straight to `out`; a chunk cut by either end goes through scratch.
    // One call site, so there is one copy of the chunk's code.
    const bool whole = skip == 0 && count >= kChunkValues;
    float* target = whole ? out : scratch;
    NormalChunk(keys, block, target);
    const int64_t taken = std::min(kChunkValues - skip, count);
    if (!whole) std::memcpy(out, scratch + skip, taken * sizeof(float));
    out += taken;
    count -= taken;
    block += kChunkBlocks;
    skip = 0;
  }
}

void FillBlockNormal(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                     float* out) {
  ForEachContiguousRun(logical, slice, [&](int64_t local, int64_t offset, int64_t length) {
    BlockNormals(random, offset, length, out + local);
  });
}

}  // namespace oneflow
