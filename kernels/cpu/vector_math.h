// exp and GELU for float, as templates over the value type: V = float or F32x8 (eight
// lanes, f32x8.h). One source for both, so the scalar functions the tests sweep and the
// vector ones the kernels run are the same algorithm.
//
// std::exp / std::tanh are library calls: a loop calling them stays scalar (glibc's
// vector math library is only used under -ffast-math, which the kernels avoid because it
// would also reorder every other float expression). These are branch-free inline
// functions (selects instead of if, integer bit tricks instead of ldexp), so on F32x8
// every step is one AVX2 instruction over 8 lanes.
//
// Accuracy (vector_math_test, against the double functions, both value types):
//   Exp, ExpUpTo88: within 2 ulp (relative 2.4e-7) of exp for x in [-87.33, 88];
//        measured 8.5e-8 (0.72 ulp of 1) over 320 M floats of that range. Exactly 0 for
//        x <= -87.68, subnormal between (exp < 1.2e-38 there); Exp gives exp(88) above 88.
//        NaN gives NaN. The kernels call it on x - max(row) <= 0, on log-probabilities
//        and in GELU, where exp(88) already saturates the result.
//   ExpForSum (sums of exponentials only): the same 2 ulp bound, measured 1.6e-7;
//        exactly 0 for x <= -87.39.
//   Gelu: relative 1e-6 on [-3, 12] (measured 7.0e-7); 2e-5 on [-9, -3], values down to
//        1e-30 (measured 9.0e-6: the float rounding of u, amplified by 2|u| in exp(-2u)).
//   GeluDerivative: 2e-6 of max(|d|, 1) on [-3, 12] (measured 1.8e-7), of
//        max(|d|, 1e-3) on [-9, -3] (measured 1.1e-6).
#ifndef KERNELS_CPU_VECTOR_MATH_H_
#define KERNELS_CPU_VECTOR_MATH_H_

#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/f32x8.h"

#if defined(OF_AVX512_CODE)
#include <immintrin.h>
#endif

namespace oneflow {
namespace cpu {
namespace vector_math_internal {

// The bits of a float as an int32 and back: per lane for vectors.
inline int32_t FloatAsBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline I32x8 FloatAsBits(F32x8 value) {
  I32x8 bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline float BitsAsFloat(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline F32x8 BitsAsFloat(I32x8 bits) {
  F32x8 value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// x clamped to [low, high]; NaN stays NaN (Max and Min return their second operand).
template <typename V>
inline V Clamp(V x, float low, float high) {
  return Min(Splat<V>(high), Max(Splat<V>(low), x));
}

}  // namespace vector_math_internal

namespace vector_math_internal {

// 2^(j/8) for j = 0..7, rounded to float (within 0.27 ulp).
// clang-format off
alignas(32) inline constexpr float kExp2Eighths[8] = {
    1.0f, 1.0905077457427979f, 1.1892070770263672f, 1.2968395948410034f,
    1.4142135381698608f, 1.5422108173370361f, 1.6817928552627563f, 1.8340080976486206f};
// clang-format on

// kExp2Eighths[bits & 7] for the low bits of `index`'s float bits: one vpermps (which reads
// only the low three bits of each lane) on F32x8.
inline float Exp2Eighth(float index) { return kExp2Eighths[FloatAsBits(index) & 7]; }
inline F32x8 Exp2Eighth(F32x8 index) {
#if defined(__AVX2__)
  F32x8 table;
  std::memcpy(&table, kExp2Eighths, sizeof(table));
  return _mm256_permutevar8x32_ps(table, (__m256i)FloatAsBits(index));
#else
  F32x8 value;
  for (int lane = 0; lane < 8; ++lane) value[lane] = Exp2Eighth(index[lane]);
  return value;
#endif
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

#if defined(OF_AVX512_CODE)
namespace vector_math_internal {
// kExp2Eighths twice: a 512-bit vpermps reads four bits of each index.
// clang-format off
alignas(64) inline constexpr float kExp2EighthsTwice[16] = {
    1.0f, 1.0905077457427979f, 1.1892070770263672f, 1.2968395948410034f,
    1.4142135381698608f, 1.5422108173370361f, 1.6817928552627563f, 1.8340080976486206f,
    1.0f, 1.0905077457427979f, 1.1892070770263672f, 1.2968395948410034f,
    1.4142135381698608f, 1.5422108173370361f, 1.6817928552627563f, 1.8340080976486206f};
// clang-format on
}  // namespace vector_math_internal
#endif

// exp(x) for x <= 88, for sums of exponentials only (the cross-entropy's log-sum-exp,
// which no gradient reads): exp(x) = 2^(k/8) exp(r) with k = round(8x / ln 2) and
// |r| <= ln(2) / 16; 2^(k/8) = 2^n 2^(j/8) (n = k >> 3, j = k & 7) from a table of eight
// floats (one vpermps) and the exponent bits, exp(r) from a degree-3 polynomial, the
// result formed as s + s (exp(r) - 1) with s = 2^(k/8). Three multiply-adds less than
// ExpInRange's degree 6 on |r| <= ln(2) / 2: the cross-entropy is bound by these
// exponentials (6.5 against 7.4 cycles per vector of 8, data in L1). Within Exp's 2 ulp,
// but measured 1.6e-7 (1.4 ulp of 1) instead of 8.5e-8; a sum of such terms is within
// 1.6e-7 of the exact one, relatively, so a log-sum-exp within 1.6e-7 absolutely. Exactly
// 0 for x <= -87.39 (n = -127), subnormal above it up to -87.34.
//
// (Exp and ExpUpTo88 stay as they are: the same table form with degree 4 was as accurate
// and 18% faster, but changes exponentials by an ulp here and there, and
// tests/actors/threads_per_device_test, whose one- and two-thread MLP losses must agree
// to 1e-5 over six steps, then failed: the matmuls' thread-dependent rounding, 1e-7 at
// step 2 before too, crossed a relu's kink at step 3. The softmax gradient feeds
// training; this sum does not.)
template <typename V>
inline V ExpForSum(V x) {
  using namespace vector_math_internal;
  x = Max(Splat<V>(-88.0f), x);
  // As ExpInRange, but exp(r) - 1 = r (1 + r (c2 + r c3)), c2 and c3 fitted (Chebyshev)
  // to (exp(r) - 1 - r) / r^2 on [-1.002 ln(2) / 16, 1.002 ln(2) / 16] (7.7e-8 before
  // rounding).
  constexpr float kRound = 12582912.0f;
  const V shifted = x * 11.541560327111707f + kRound;
  const V k = shifted - kRound;
  const V r = (x - k * 0.086669921875f) + k * 2.6524305212660693e-5f;
  V h = r * 0.16667452454566956f + 0.500039279460907f;
  h = h * r + 1.0f;
  const V exp_r_minus_1 = h * r;
  const V power =
      BitsAsFloat(((FloatAsBits(shifted) << 20) & static_cast<int32_t>(0xFF800000)) + (127 << 23));
  const V scale = Exp2Eighth(shifted) * power;
  return scale * exp_r_minus_1 + scale;
}

#if defined(OF_AVX512_CODE)
// ExpForSum on 16 lanes, for functions compiled for AVX-512 (cpu_features.h): the same
// operations in the same order, each rounded the same, so each lane's value is
// ExpForSum's bit for bit (vector_math_test checks it).
//
// (The intrinsics whose unmasked forms take an undefined pass-through operand are used in
// their masked forms with every lane set: GCC 12 warns, wrongly, that the undefined one
// may be used uninitialized.)
OF_TARGET_AVX512_INLINE inline __m512 ExpForSum16(__m512 x) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 low = _mm512_set1_ps(-88.0f);
  x = _mm512_mask_max_ps(low, kAll, low, x);
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(11.541560327111707f), round);
  const __m512 k = _mm512_sub_ps(shifted, round);
  const __m512 r = _mm512_fmadd_ps(k, _mm512_set1_ps(2.6524305212660693e-5f),
                                   _mm512_fnmadd_ps(k, _mm512_set1_ps(0.086669921875f), x));
  __m512 h =
      _mm512_fmadd_ps(r, _mm512_set1_ps(0.16667452454566956f), _mm512_set1_ps(0.500039279460907f));
  h = _mm512_fmadd_ps(h, r, _mm512_set1_ps(1.0f));
  const __m512 exp_r_minus_1 = _mm512_mul_ps(h, r);
  const __m512i bits = _mm512_castps_si512(shifted);
  const __m512i shifted_bits = _mm512_mask_slli_epi32(bits, kAll, bits, 20);
  const __m512 power = _mm512_castsi512_ps(_mm512_add_epi32(
      _mm512_and_si512(shifted_bits, _mm512_set1_epi32(static_cast<int32_t>(0xFF800000))),
      _mm512_set1_epi32(127 << 23)));
  const __m512 table = _mm512_load_ps(vector_math_internal::kExp2EighthsTwice);
  const __m512 scale = _mm512_mul_ps(_mm512_mask_permutexvar_ps(table, kAll, bits, table), power);
  return _mm512_fmadd_ps(scale, exp_r_minus_1, scale);
}

// ExpInRange on 16 lanes (AVX-512) as its two factors, p = exp(r) and scale = 2^n, each
// rounded as ExpInRange rounds them: ExpInRange returns p * scale, which GCC fuses with an
// addition that follows it (1 + exp in GELU), and the 16-lane callers must round alike.
struct ExpParts16 {
  __m512 p, scale;
};
OF_TARGET_AVX512_INLINE inline ExpParts16 ExpInRangeParts16(__m512 x) {
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), round);
  const __m512 n = _mm512_sub_ps(shifted, round);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f),
                                   _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.3814613260779772e-3f), r,
                             _mm512_set1_ps(8.368709824171195e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166838736126115e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666652068983302e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999993451708435e-1f));
  // p * r * r + r + 1: (p * r) * r + r fused, then + 1.
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_castps_si512(shifted);
  const __m512i exponent = _mm512_mask_slli_epi32(bits, 0xFFFF, bits, 23);
  const __m512 scale =
      _mm512_castsi512_ps(_mm512_add_epi32(exponent, _mm512_set1_epi32(127 << 23)));
  return {p, scale};
}

// ExpInRange on 16 lanes, each lane ExpInRange's bit for bit (vector_math_test).
OF_TARGET_AVX512_INLINE inline __m512 ExpInRange16(__m512 x) {
  const ExpParts16 parts = ExpInRangeParts16(x);
  return _mm512_mul_ps(parts.p, parts.scale);
}

// max(low, x), min(high, x) lane by lane as Max and Min (f32x8.h): the second operand
// where either is NaN.
OF_TARGET_AVX512_INLINE inline __m512 Max16(__m512 a, __m512 b) {
  return _mm512_mask_max_ps(a, 0xFFFF, a, b);
}
OF_TARGET_AVX512_INLINE inline __m512 Min16(__m512 a, __m512 b) {
  return _mm512_mask_min_ps(a, 0xFFFF, a, b);
}

// ExpUpTo88 and Exp on 16 lanes, each lane ExpUpTo88's and Exp's bit for bit.
OF_TARGET_AVX512_INLINE inline __m512 ExpUpTo88x16(__m512 x) {
  return ExpInRange16(Max16(_mm512_set1_ps(-88.0f), x));
}
OF_TARGET_AVX512_INLINE inline __m512 Exp16(__m512 x) {
  return ExpInRange16(Min16(_mm512_set1_ps(88.0f), Max16(_mm512_set1_ps(-88.0f), x)));
}
#endif

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
// 2 x u'(x) = 2 sqrt(2 / pi) x (1 + 3 * 0.044715 x^2). x is clamped to [-9.5, 10]: beyond,
// the derivative is 1 to float precision above and under 2e-31 in size below (where the
// clamp gives -1.2e-31), and in between -2u stays in [-88, 76], so exp needs no clamp of
// its own (ExpInRange; two instructions less than Exp on an already clamped x).
template <typename V>
inline V GeluDerivative(V x) {
  using namespace vector_math_internal;
  constexpr float kA = 2.0f * kGeluScale;
  constexpr float kB = 2.0f * kGeluScale * 3.0f * kGeluCubic;
  const V xc = Clamp(x, -9.5f, 10.0f);
  const V x_squared = xc * xc;
  const V e = ExpInRange(MinusTwoU(xc, x_squared));
  const V s = 1.0f / (1.0f + e);
  const V two_x_slope = xc * (x_squared * kB + kA);  // 2 x u'(x)
  return s * (two_x_slope * (e * s) + 1.0f);
}

inline float GeluDerivativeF(float x) { return GeluDerivative(x); }

#if defined(OF_AVX512_CODE)
// Gelu and GeluDerivative on 16 lanes for functions compiled for AVX-512
// (cpu_features.h): the same operations in the same order as on F32x8, so each lane is
// the same bits (vector_math_test checks it).
OF_TARGET_AVX512_INLINE inline __m512 Gelu16(__m512 x) {
  constexpr float kA = -2.0f * kGeluScale;
  constexpr float kB = -2.0f * kGeluScale * kGeluCubic;
  const __m512 minus_two_u = _mm512_mul_ps(
      x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(kB), _mm512_set1_ps(kA)));
  // Exp's clamp, then 1 + p * scale fused, as GCC compiles Gelu on F32x8.
  const ExpParts16 e =
      ExpInRangeParts16(Min16(_mm512_set1_ps(88.0f), Max16(_mm512_set1_ps(-88.0f), minus_two_u)));
  return _mm512_div_ps(x, _mm512_fmadd_ps(e.p, e.scale, _mm512_set1_ps(1.0f)));
}

OF_TARGET_AVX512_INLINE inline __m512 GeluDerivative16(__m512 x) {
  constexpr float kA = 2.0f * kGeluScale;
  constexpr float kB = 2.0f * kGeluScale * 3.0f * kGeluCubic;
  constexpr float kMinusA = -2.0f * kGeluScale;
  constexpr float kMinusB = -2.0f * kGeluScale * kGeluCubic;
  const __m512 xc = Min16(_mm512_set1_ps(10.0f), Max16(_mm512_set1_ps(-9.5f), x));
  const __m512 x_squared = _mm512_mul_ps(xc, xc);
  const __m512 e = ExpInRange16(_mm512_mul_ps(
      xc, _mm512_fmadd_ps(x_squared, _mm512_set1_ps(kMinusB), _mm512_set1_ps(kMinusA))));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, e));
  const __m512 two_x_slope =
      _mm512_mul_ps(xc, _mm512_fmadd_ps(x_squared, _mm512_set1_ps(kB), _mm512_set1_ps(kA)));
  return _mm512_mul_ps(s, _mm512_fmadd_ps(two_x_slope, _mm512_mul_ps(e, s), one));
}
#endif

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_VECTOR_MATH_H_
