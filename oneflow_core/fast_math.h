// Float approximations of log, sin and cos for vector loops: the transcendentals of the
// bulk normal generator (random.h, BlockNormals).
//
// libm's logf/sinf/cosf are calls the vectorizer cannot see through, so a loop over them
// stays scalar (and the double versions LogicalRandom::Normal uses are slower still).
// These are inline, branch-free and table-free (Cephes' minimax polynomials, range
// reduction by bit manipulation), so a loop of fixed trip count that calls them on
// arrays vectorizes under -O2 -march=x86-64-v3 (8 floats per AVX2 instruction).
//
// Max errors against the double functions, measured exhaustively on every input the
// generator produces (fast_math_test repeats the measurement and asserts the bounds):
//   FastLog(k * 2^-24), k in [1, 2^24]:           relative 8.1e-8 (bound 1.0e-7)
//   FastSinCosTurns(k), k in [0, 2^24), sin, cos:  absolute 1.1e-7 (bound 1.5e-7)
// i.e. about one float ulp: log within one ulp of its result, sin and cos within two
// ulps of 1 (the polynomials are good to ~1 ulp; the rest is the float rounding of the
// reduced argument). FastLog stays within relative 1e-7 on a sweep of all positive
// normal floats too.
#ifndef ONEFLOW_CORE_FAST_MATH_H_
#define ONEFLOW_CORE_FAST_MATH_H_

#include <cstdint>
#include <cstring>

namespace oneflow {
namespace fast_math_internal {

inline int32_t FloatBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float BitsFloat(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace fast_math_internal

// ln(x) for a positive normal float x (0, subnormals, infinities and NaN are not handled:
// the generator never passes them). x = 2^e * m with m in [sqrt(1/2), sqrt(2)), split off
// by integer arithmetic on the bits; ln(x) = e ln 2 + ln(m), ln(m) by Cephes logf's
// degree-9 polynomial in m - 1, and ln 2 split in two parts so e ln 2 adds no error.
inline float FastLog(float x) {
  using fast_math_internal::BitsFloat;
  using fast_math_internal::FloatBits;
  constexpr int32_t kSqrtHalfBits = 0x3f3504f3;  // sqrt(1/2) as a float
  const int32_t offset = FloatBits(x) - kSqrtHalfBits;
  const float exponent = static_cast<float>(offset >> 23);  // arithmetic shift: floor
  const float m = BitsFloat((offset & 0x007fffff) + kSqrtHalfBits);
  const float t = m - 1.0f;  // exact (Sterbenz), in [-0.293, 0.415)
  const float t2 = t * t;
  float p = 7.0376836292e-2f;
  p = p * t - 1.1514610310e-1f;
  p = p * t + 1.1676998740e-1f;
  p = p * t - 1.2420140846e-1f;
  p = p * t + 1.4249322787e-1f;
  p = p * t - 1.6668057665e-1f;
  p = p * t + 2.0000714765e-1f;
  p = p * t - 2.4999993993e-1f;
  p = p * t + 3.3333331174e-1f;
  // ln 2 = 0.693359375 (exact in 9 bits, so exponent * it is exact) - 2.12194440e-4.
  const float tail = p * t * t2 - 2.12194440e-4f * exponent - 0.5f * t2;
  return t + tail + 0.693359375f * exponent;
}

// sin and cos of the angle 2 pi k / 2^24 (k turns of 2^-24), for k < 2^24. The reduction
// is exact integer arithmetic: the nearest quarter turn q (k's top two bits after
// rounding) and the rest r in [-2^21, 2^21), so the angle is q pi/2 + x with
// x = r (pi/2) 2^-22 in [-pi/4, pi/4]; sin x and cos x by Cephes sinf/cosf's
// polynomials, then rotated by q quarter turns (swaps and sign flips as selects).
inline void FastSinCosTurns(uint32_t k, float* sine, float* cosine) {
  const uint32_t shifted = k + (1u << 21);
  const uint32_t quarter = (shifted >> 22) & 3u;
  const int32_t rest = static_cast<int32_t>(shifted & ((1u << 22) - 1)) - (1 << 21);
  const float x = static_cast<float>(rest) * 3.74507028e-7f;  // (pi / 2) * 2^-22
  const float x2 = x * x;
  float s = -1.9515295891e-4f;
  s = s * x2 + 8.3321608736e-3f;
  s = s * x2 - 1.6666654611e-1f;
  const float sin_x = x + x * x2 * s;
  float c = 2.443315711809948e-5f;
  c = c * x2 - 1.388731625493765e-3f;
  c = c * x2 + 4.166664568298827e-2f;
  const float cos_x = 1.0f - 0.5f * x2 + x2 * x2 * c;
  // sin(x + q pi/2), cos(x + q pi/2) for q = 0..3: (s, c), (c, -s), (-s, -c), (-c, s).
  const bool odd = (quarter & 1u) != 0;
  const float sin_q = odd ? cos_x : sin_x;
  const float cos_q = odd ? sin_x : cos_x;
  *sine = (quarter & 2u) != 0 ? -sin_q : sin_q;
  *cosine = ((quarter + 1u) & 2u) != 0 ? -cos_q : cos_q;
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_FAST_MATH_H_
