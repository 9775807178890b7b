// exp and GELU for float, as templates over the value type: V = float or Float8 (eight
// lanes, float8.h). One source for both, so the scalar functions the tests sweep and the
// vector ones the kernels run are the same algorithm.
//
// std::exp / std::tanh are library calls: a loop calling them stays scalar (glibc's
// vector math library is only used under -ffast-math, which the kernels avoid because it
// would also reorder every other float expression). These are branch-free inline
// functions (selects instead of if, integer bit tricks instead of ldexp), so on Float8
// every step is one AVX2 instruction over 8 lanes.
//
// Accuracy (vector_math_test, against the double functions, both value types):
//   Exp, ExpUpTo88: within 2 ulp (relative 2.4e-7) of exp for x in [-87.33, 88];
//        measured 8.5e-8 (0.72 ulp of 1) over 320 M floats of that range. Exactly 0 for
//        x <= -87.68, subnormal between (exp < 1.2e-38 there); Exp gives exp(88) above 88.
//        NaN gives NaN. The kernels call it on x - max(row) <= 0, on log-probabilities
//        and in GELU, where exp(88) already saturates the result.
//   Gelu: relative 1e-6 on [-3, 12] (measured 7.0e-7); 2e-5 on [-9, -3], values down to
//        1e-30 (measured 9.0e-6: the float rounding of u, amplified by 2|u| in exp(-2u)).
//   GeluDerivative: 2e-6 of max(|d|, 1) on [-3, 12] (measured 1.8e-7), of
//        max(|d|, 1e-3) on [-9, -3] (measured 1.1e-6).
#ifndef KERNELS_CPU_VECTOR_MATH_H_
#define KERNELS_CPU_VECTOR_MATH_H_

#include <cstdint>
#include <cstring>

#include "kernels/cpu/float8.h"

namespace oneflow {
namespace cpu {
namespace vector_math_internal {

// The bits of a float as an int32 and back: per lane for vectors.
inline int32_t FloatAsBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline Int8 FloatAsBits(Float8 value) {
  Int8 bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline float BitsAsFloat(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline Float8 BitsAsFloat(Int8 bits) {
  Float8 value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// x clamped to [low, high]; NaN stays NaN (Max and Min return their second operand).
template <typename V>
inline V Clamp(V x, float low, float high) {
  return Min(Splat<V>(high), Max(Splat<V>(low), x));
}

}  // namespace vector_math_internal

// exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2) / 2, for x in
// [-88, 88]; exp(r) from a degree-6 minimax polynomial, 2^n assembled in the exponent
// bits. Exp and ExpUpTo88 below bring x into that range first.
template <typename V>
inline V ExpInRange(V x) {
  using namespace vector_math_internal;
  // Adding 1.5 * 2^23 rounds to an integer in the FPU's rounding mode (no call to
  // nearbyint, which would not vectorize): shifted = 1.5 * 2^23 + n, whose low mantissa
  // bits hold n in two's complement, and subtracting it back gives n as a float.
  constexpr float kRound = 12582912.0f;
  const V shifted = x * 1.44269504088896341f + kRound;
  const V n = shifted - kRound;
  // ln 2 split in a high part exact in float and a low correction (Cody-Waite).
  const V r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  // exp(r) = 1 + r + r^2 p(r), p of degree 4 fitted (Remez) to the relative error of
  // exp on [-ln(2)/2, ln(2)/2]: 3.1e-9 in exact arithmetic, far below float rounding
  // (Cephes' expf uses degree 7 for the same float accuracy).
  V p = Splat<V>(1.3814613260779772e-3f);
  p = p * r + 8.368709824171195e-3f;
  p = p * r + 4.166838736126115e-2f;
  p = p * r + 1.666652068983302e-1f;
  p = p * r + 4.9999993451708435e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n: n is in [-127, 127], so n + 127 is a valid biased exponent. Shifting shifted's
  // bits left by 23 keeps only n's low 9 bits (1.5 * 2^23 contributes none): the exponent
  // field of 2^n, minus 127. n = -127 (x <= -87.68) gives the bits of +0, so exp is 0
  // there; for x in (-87.68, -87.33) the product below is subnormal (gradual underflow).
  const V scale = BitsAsFloat((FloatAsBits(shifted) << 23) + (127 << 23));
  return p * scale;
}

// exp(x) for every float x: x is clamped to [-88, 88] (exp(88) for larger x, 0 for
// x <= -87.68). NaN gives NaN.
template <typename V>
inline V Exp(V x) {
  return ExpInRange(vector_math_internal::Clamp(x, -88.0f, 88.0f));
}

// exp(x) for x <= 88 (x - max(row) <= 0 in softmax): one instruction less than Exp, no
// upper clamp; above 88 the result is garbage. NaN gives NaN.
template <typename V>
inline V ExpUpTo88(V x) {
  return ExpInRange(Max(Splat<V>(-88.0f), x));
}

inline float ExpF(float x) { return Exp(x); }

// GELU with the tanh approximation (GPT-2), as the reference computes it:
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2 / pi) (x + 0.044715 x^3).
// Written with s = (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)) rather than with tanh: for
// x < -3, tanh(u) rounds to -1 in float and 1 + tanh(u) would cancel to 0, while s keeps
// its relative accuracy in the tail (and the derivative's two terms there, each ~1e-4
// and nearly opposite, become one product).
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

namespace vector_math_internal {

// -2u = -2 sqrt(2 / pi) (x + 0.044715 x^3) = x (a + b x^2), given x^2: one FMA and one
// product, the constants folded.
template <typename V>
inline V MinusTwoU(V x, V x_squared) {
  constexpr float kA = -2.0f * kGeluScale;
  constexpr float kB = -2.0f * kGeluScale * kGeluCubic;
  return x * (x_squared * kB + kA);
}

}  // namespace vector_math_internal

template <typename V>
inline V Gelu(V x) {
  return x / (1.0f + Exp(vector_math_internal::MinusTwoU(x, x * x)));
}

inline float GeluF(float x) { return Gelu(x); }

// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x) with t = tanh(u); with 1 + t = 2s,
// 1 - t = 2(1 - s) = 2 e s (e = exp(-2u)): s (1 + 2 x u'(x) e s), where
// 2 x u'(x) = 2 sqrt(2 / pi) x (1 + 3 * 0.044715 x^2). x is clamped to [-20, 20], beyond
// which the derivative is 0 or 1 to float precision, so that x^3 cannot overflow into
// inf * 0.
template <typename V>
inline V GeluDerivative(V x) {
  using namespace vector_math_internal;
  constexpr float kA = 2.0f * kGeluScale;
  constexpr float kB = 2.0f * kGeluScale * 3.0f * kGeluCubic;
  const V xc = Clamp(x, -20.0f, 20.0f);
  const V x_squared = xc * xc;
  const V e = Exp(MinusTwoU(xc, x_squared));
  const V s = 1.0f / (1.0f + e);
  const V two_x_slope = xc * (x_squared * kB + kA);  // 2 x u'(x)
  return s * (two_x_slope * (e * s) + 1.0f);
}

inline float GeluDerivativeF(float x) { return GeluDerivative(x); }

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_VECTOR_MATH_H_
