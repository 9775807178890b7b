#include "oneflow_core/random.h"

#include <cmath>

namespace oneflow {
namespace {

// Philox4x32 constants from the paper: round multipliers and Weyl key increments.
constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;
constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
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

}  // namespace oneflow
