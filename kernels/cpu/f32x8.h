// Operations on F32x8, eight floats in one AVX2 register (oneflow_core/simd_lanes.h has
// the vector types), and the array loops of the kernels built on them. Internal to
// //kernels/cpu.
//
// Why explicit vectors rather than plain loops left to the auto-vectorizer: GCC gives up
// on a loop for reasons the source does not show (gelu_grad's loop stayed scalar, at
// 13 ns per element, because of the selects of an inlined helper), and nothing fails when
// it does. Code written on F32x8 is vector code by construction: `a * b + c` on F32x8
// is one FMA over 8 lanes, a comparison gives an I32x8 mask of 0 / -1 lanes, and
// `mask ? a : b` is a blend. Under -march=x86-64-v3 each operation is one AVX2
// instruction; elsewhere GCC lowers the same source to narrower vectors or scalars.
//
// Tails: the last n % 8 elements of an array go through the same vector code, loaded
// into a padded register (LoadPartial) and stored back in part (StorePartial). So an
// element's result does not depend on whether it falls in the body or the tail, which
// differ between a whole tensor and its device slices: splitting a tensor over devices
// gives every element the value it has on one device, bit for bit.
//
// Reductions (Sum, Max) combine lanes in one fixed order, so a row's sum depends only on
// the row's values, not on where the row sits in memory.
#ifndef KERNELS_CPU_F32X8_H_
#define KERNELS_CPU_F32X8_H_

#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "oneflow_core/simd_lanes.h"

namespace oneflow {
namespace cpu {

constexpr int64_t kLanes = 8;

// `value` in every lane; for V = float, the value itself (so that templates over the
// value type, vector_math.h, take either).
template <typename V>
inline V Splat(float value);
template <>
inline float Splat<float>(float value) {
  return value;
}
template <>
inline F32x8 Splat<F32x8>(float value) {
  return F32x8{value, value, value, value, value, value, value, value};
}

// Unaligned loads and stores (memcpy of 32 bytes compiles to vmovups).
inline F32x8 Load(const float* from) {
  F32x8 value;
  std::memcpy(&value, from, sizeof(value));
  return value;
}
inline void Store(float* to, F32x8 value) { std::memcpy(to, &value, sizeof(value)); }

// The first n < 8 lanes from memory, the others `fill`.
inline F32x8 LoadPartial(const float* from, int64_t n, float fill) {
  float lanes[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = i < n ? from[i] : fill;
  return Load(lanes);
}
inline void StorePartial(float* to, int64_t n, F32x8 value) {
  std::memcpy(to, &value, static_cast<size_t>(n) * sizeof(float));
}

// Lane sums and maxima in a fixed order: halves, then quarters, then pairs.
inline float Sum(F32x8 v) {
  v += __builtin_shuffle(v, I32x8{4, 5, 6, 7, 0, 1, 2, 3});
  v += __builtin_shuffle(v, I32x8{2, 3, 0, 1, 6, 7, 4, 5});
  v += __builtin_shuffle(v, I32x8{1, 0, 3, 2, 5, 4, 7, 6});
  return v[0];
}
// a > b ? a : b and a < b ? a : b, lane by lane: b when either is NaN. The x86
// instructions compute exactly this, but GCC matches the select to them only when
// neither operand is a constant (it first rewrites `c > x` as `x < c`), so on AVX they
// are spelled out; a clamp is then two instructions instead of four.
#if defined(__AVX__)
inline F32x8 Max(F32x8 a, F32x8 b) { return _mm256_max_ps(a, b); }
inline F32x8 Min(F32x8 a, F32x8 b) { return _mm256_min_ps(a, b); }
#else
inline F32x8 Max(F32x8 a, F32x8 b) { return a > b ? a : b; }
inline F32x8 Min(F32x8 a, F32x8 b) { return a < b ? a : b; }
#endif
inline float Max(float a, float b) { return a > b ? a : b; }
inline float Min(float a, float b) { return a < b ? a : b; }

inline float Max(F32x8 v) {
  v = Max(v, __builtin_shuffle(v, I32x8{4, 5, 6, 7, 0, 1, 2, 3}));
  v = Max(v, __builtin_shuffle(v, I32x8{2, 3, 0, 1, 6, 7, 4, 5}));
  v = Max(v, __builtin_shuffle(v, I32x8{1, 0, 3, 2, 5, 4, 7, 6}));
  return v[0];
}

// The low and the high four lanes, as doubles. GCC 12 converts a Float4 to a F64x4 in
// two halves (five instructions), hence the AVX intrinsics (one vcvtps2pd each).
#if defined(__AVX__)
inline F64x4 LowAsDouble(F32x8 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
inline F64x4 HighAsDouble(F32x8 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
#else
inline F64x4 LowAsDouble(F32x8 v) {
  return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), F64x4);
}
inline F64x4 HighAsDouble(F32x8 v) {
  return __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), F64x4);
}
#endif

// to[i] += double(a[i]) for i < 8.
inline void AddToDoubles(double* to, F32x8 a) {
  F64x4 low, high;
  std::memcpy(&low, to, sizeof(low));
  std::memcpy(&high, to + 4, sizeof(high));
  low += LowAsDouble(a);
  high += HighAsDouble(a);
  std::memcpy(to, &low, sizeof(low));
  std::memcpy(to + 4, &high, sizeof(high));
}

// out[i] = fn(x[i]) for i < n, fn taking and returning F32x8.
template <typename Fn>
inline void Map(const float* x, float* out, int64_t n, Fn&& fn) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(out + i, fn(Load(x + i)));
  if (i < n) StorePartial(out + i, n - i, fn(LoadPartial(x + i, n - i, 0.0f)));
}

// out[i] = fn(x[i], y[i]) for i < n.
template <typename Fn>
inline void Map(const float* x, const float* y, float* out, int64_t n, Fn&& fn) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(out + i, fn(Load(x + i), Load(y + i)));
  if (i < n) {
    StorePartial(out + i, n - i,
                 fn(LoadPartial(x + i, n - i, 0.0f), LoadPartial(y + i, n - i, 0.0f)));
  }
}

// out[i] = fn(x[i], y[i], z[i]) for i < n.
template <typename Fn>
inline void Map(const float* x, const float* y, const float* z, float* out, int64_t n, Fn&& fn) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Store(out + i, fn(Load(x + i), Load(y + i), Load(z + i)));
  }
  if (i < n) {
    StorePartial(out + i, n - i,
                 fn(LoadPartial(x + i, n - i, 0.0f), LoadPartial(y + i, n - i, 0.0f),
                    LoadPartial(z + i, n - i, 0.0f)));
  }
}

// Sum of fn(x[i]) (fn: F32x8 -> F32x8) over i < n; the padding lanes of the tail are
// loaded as `fill` and must map to 0. Two accumulators, alternating by vector index
// (vector additions have a latency of several cycles), then combined in a fixed order.
template <typename Fn>
inline float SumOf(const float* x, int64_t n, float fill, Fn&& fn) {
  F32x8 even{}, odd{};
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    even += fn(Load(x + i));
    odd += fn(Load(x + i + kLanes));
  }
  if (i + kLanes <= n) {
    even += fn(Load(x + i));
    i += kLanes;
  }
  if (i < n) odd += fn(LoadPartial(x + i, n - i, fill));
  return Sum(even + odd);
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_F32X8_H_
