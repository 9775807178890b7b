// A counter-based RNG keyed by (seed, stream) and indexed by logical element index.
//
// Variables and synthetic data must hold the same logical values whatever the device
// layout, so a value is a pure function of (seed, stream, logical index): Philox4x32-10
// (Salmon et al., SC'11, as in cuRAND and Random123) with
//   key     = {seed low 32 bits, seed high 32 bits}
//   counter = {index low, index high, stream low, stream high}
// Every element gets its own Philox block (the bulk generators, BulkUniform and
// BlockNormals, share one among four consecutive elements), so a device that generates
// its slice calls the same function on the same logical indices as a single device
// generating the whole tensor, and gets identical bits. `stream` separates independent
// sequences under one seed (e.g. the iteration number of a data source).
//
// Two ways to draw normals from it: LogicalRandom::Normal / FillNormal (one block per
// element, Box-Muller in double: the variables' initializers) and BlockNormals /
// FillBlockNormal (four values per block, float polynomials, vectorized: 25-50x cheaper,
// for bulk synthetic data). They are different sequences.
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

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

  // The 4 random words of logical element `index`.
  std::array<uint32_t, 4> Bits(int64_t index) const;
  // Uniform in [0, 1) with 24 random bits (every float it returns is exact).
  float Uniform(int64_t index) const;
  // Standard normal by Box-Muller on the element's first two words.
  float Normal(int64_t index) const;
  // Uniform in [0, 1) with 24 random bits, four values per block: logical element i
  // takes word w = i mod 4 of block j = i / 4, as BlockNormals below does, and returns
  // (Bits(j)[w] >> 8) * 2^-24. Still a pure function of (seed, stream, i), and a
  // different sequence from Uniform's. This call computes the whole block for one value;
  // code that generates a range computes each block once for its four values, a quarter
  // of Uniform's Philox work (dropout's mask: kept iff BulkUniform(i) >= rate, in the
  // reference and in kernels/cpu/philox.h).
  float BulkUniform(int64_t index) const;

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

// Standard normals for bulk data, four per Philox block (as LogicalRandom::BulkUniform):
// logical element i is value i mod 4 of block j = i / 4, whose words w = random.Bits(j)
// give two Box-Muller pairs
//   r_p = sqrt(-2 ln u_p),  u_p = ((w[2p] >> 8) + 1) * 2^-24      in (0, 1]
//   a_p = 2 pi v_p,         v_p = (w[2p + 1] >> 8) * 2^-24         in [0, 1)
//   element 4j + 2p = r_p cos a_p,  element 4j + 2p + 1 = r_p sin a_p    (p = 0, 1)
// so a value is still a pure function of (seed, stream, logical index): a range that
// starts or ends inside a block computes the block and keeps its part. ln, sin and cos
// are fast_math.h's float polynomials and the square root is the hardware's, so every
// value is within 2.7e-7 * r_p of the formula evaluated in double (r's relative error
// 1.0e-7, plus sin/cos's 1.1e-7, plus rounding the product: 6e-8; the largest seen is
// 1.9e-7 * r_p). |value| <= r_p <= sqrt(48 ln 2) = 5.77, so the error is below 1.6e-6:
// 24-bit uniforms truncate the normal at 5.77 sigma, a tail of probability 8e-9.
// random_test checks the bound against the double formula and the distribution.
// Cost: about 2 ns per value on one core (x86-64-v3), two thirds of it Philox.
// The last bits depend on where GCC fuses the polynomials' multiply-adds, which the build
// flags fix (.bazelrc: -O2 -march=x86-64-v3) and which is the same for every value of a
// binary (one code path, no scalar remainder loops): the processes of one run must run
// binaries built alike, as for any float kernel.
//
// BlockNormals writes the values of logical indices [begin, begin + count) of a flat
// sequence; FillBlockNormal those of `slice` of a tensor of shape `logical` (row-major
// logical index), densely into `out`.
void BlockNormals(const LogicalRandom& random, int64_t begin, int64_t count, float* out);
void FillBlockNormal(const Shape& logical, const TensorSlice& slice, const LogicalRandom& random,
                     float* out);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_RANDOM_H_
