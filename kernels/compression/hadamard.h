// The fast Walsh-Hadamard transform, for rotating codec groups before quantization.
//
// H_n (n = 2^k) is the Sylvester Hadamard matrix: H_1 = [1], H_2n = [[H_n, H_n],
// [H_n, -H_n]]. H_n / sqrt(n) is orthonormal and symmetric, hence its own inverse, and it
// spreads one large element evenly over the whole group: an outlier that would set a
// group's quantization scale alone becomes n entries of size 1/sqrt(n) of it, so the
// other elements keep their resolution (QuaRot, SDP4Bit, TACO).
//
// Groups whose length is not a power of two (the last group of a tensor) are rotated
// piecewise: length n = sum of distinct powers of two p_1 > p_2 > ..., and each
// consecutive piece of p_i elements gets H_{p_i} / sqrt(p_i) (a piece of 1 is left as
// it is). The result is still orthonormal and its own inverse, and the wire size does
// not change (no padding).
#ifndef KERNELS_COMPRESSION_HADAMARD_H_
#define KERNELS_COMPRESSION_HADAMARD_H_

#include <cstdint>

namespace oneflow {

// data[0, n) := H_n data, unnormalised, in place. Precondition: n is a power of two
// (n >= 1). The butterflies run stage by stage (strides 1, 2, 4, ...), a[j], a[j + h]
// -> a[j] + a[j + h], a[j] - a[j + h]; the vector form computes exactly these sums, so
// the result does not depend on the machine.
void FastWalshHadamard(float* data, int64_t n);
// out[0, n) := H_n in[0, n); `in` may equal `out` (in place) but not overlap it otherwise.
void FastWalshHadamard(const float* in, float* out, int64_t n);

// 1 / sqrt(n) as a float: the normalisation of a power-of-two piece.
float HadamardNorm(int64_t n);

// data[0, n) := its normalised rotation, in place: H_n / sqrt(n) for a power of two,
// piecewise (above) otherwise. Applying it twice gives the input back up to rounding
// (about 1e-7 relative per stage). n >= 0.
void HadamardRotate(float* data, int64_t n);

}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_HADAMARD_H_
