// A counter-based RNG keyed by (seed, stream) and indexed by logical element index.
//
// Variables and synthetic data must hold the same logical values whatever the device
// layout, so a value is a pure function of (seed, stream, logical index): Philox4x32-10
// (Salmon et al., SC'11, as in cuRAND and Random123) with
//   key     = {seed low 32 bits, seed high 32 bits}
//   counter = {index low, index high, stream low, stream high}
// Every element gets its own Philox block, so a device that generates its slice calls
// the same function on the same logical indices as a single device generating the
// whole tensor, and gets identical bits. `stream` separates independent sequences under
// one seed (e.g. the iteration number of a data source).
#ifndef ONEFLOW_CORE_RANDOM_H_
#define ONEFLOW_CORE_RANDOM_H_

#include <array>
#include <cstdint>

#include "oneflow_core/shape.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {

// One Philox4x32 block with 10 rounds. Matches Random123's known-answer vectors.
std::array<uint32_t, 4> Philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key);

class LogicalRandom {
 public:
  explicit LogicalRandom(uint64_t seed, uint64_t stream = 0) : seed_(seed), stream_(stream) {}

  // The 4 random words of logical element `index`.
  std::array<uint32_t, 4> Bits(int64_t index) const;
  // Uniform in [0, 1) with 24 random bits (every float it returns is exact).
  float Uniform(int64_t index) const;
  // Standard normal by Box-Muller on the element's first two words.
  float Normal(int64_t index) const;

 private:
  uint64_t seed_;
  uint64_t stream_;
};

// Fill `out` (the dense row-major buffer of slice.shape()) with the values that the
// logical tensor of shape `logical` has over `slice`: uniform in [low, high).
void FillUniform(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                 float low, float high, float* out);

// As FillUniform, with normal values mean + stddev * N(0, 1).
void FillNormal(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                float mean, float stddev, float* out);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_RANDOM_H_
