// exp and GELU for float written so that GCC vectorizes the loops that call them.
//
// std::exp / std::tanh are library calls: a loop calling them stays scalar (glibc's
// vector math library is only used under -ffast-math, which the kernels avoid because it
// would also reorder every other float expression). These are branch-free inline
// functions (select instead of if, integer bit tricks instead of ldexp), so softmax,
// cross-entropy and GELU loops run 8 lanes at a time with AVX2.
//
// Accuracy (vector_math_test): ExpF within 2 ulp of exp for x in [-87.3, 88]; exactly 0
// below -87.33 (where exp is subnormal or 0, < 1.2e-38); inputs above 88 give exp(88).
// The kernels call it on x - max(row) <= 0 and in GELU, where exp(88) already saturates
// the result. NaN gives NaN.
#ifndef KERNELS_CPU_VECTOR_MATH_H_
#define KERNELS_CPU_VECTOR_MATH_H_

#include <cstdint>
#include <cstring>

namespace oneflow {
namespace cpu {

inline float BitsAsFloat(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2) / 2; exp(r) from the
// degree-7 minimax polynomial of Cephes' expf, 2^n assembled in the exponent bits.
inline float ExpF(float x) {
  const float clamped = x > 88.0f ? 88.0f : (x < -88.0f ? -88.0f : x);
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer in the FPU's
  // rounding mode without a call to nearbyint (which would not vectorize).
  constexpr float kRound = 12582912.0f;
  const float n = (clamped * 1.44269504088896341f + kRound) - kRound;
  // ln 2 split in a high part exact in float and a low correction (Cody-Waite).
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n is in [-127, 127] here, so n + 127 is a valid biased exponent (0 only below the
  // cut-off, where the select discards it).
  const float scale = BitsAsFloat((static_cast<int32_t>(n) + 127) << 23);
  const float value = p * scale;
  return x < -87.33654f ? 0.0f : value;
}

// GELU with the tanh approximation (GPT-2), as the reference computes it:
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2 / pi) (x + 0.044715 x^3).
// Written with s = (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)) rather than with tanh: for
// x < -3, tanh(u) rounds to -1 in float and 1 + tanh(u) would cancel to 0, while s keeps
// its relative accuracy in the tail (and the derivative's two terms there, each ~1e-4
// and nearly opposite, become one product).
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

inline float GeluF(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return x / (1.0f + ExpF(-2.0f * u));
}

// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x) with t = tanh(u); with 1 + t = 2s,
// 1 - t = 2(1 - s) = 2 e s (e = exp(-2u)): s (1 + 2 x e s u'(x)). x is clamped to
// [-20, 20], beyond which the derivative is 0 or 1 to float precision, so that x^3
// cannot overflow into inf * 0.
inline float GeluDerivativeF(float x) {
  const float xc = x > 20.0f ? 20.0f : (x < -20.0f ? -20.0f : x);
  const float u = kGeluScale * (xc + kGeluCubic * xc * xc * xc);
  const float e = ExpF(-2.0f * u);
  const float s = 1.0f / (1.0f + e);
  return s * (1.0f + 2.0f * xc * (e * s) * kGeluScale * (1.0f + 3.0f * kGeluCubic * xc * xc));
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_VECTOR_MATH_H_
