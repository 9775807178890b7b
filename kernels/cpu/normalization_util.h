// Row primitives shared by the normalization kernels and their gradients, on Float8
// (float8.h): each sum is a function of the row alone (lanes combined in a fixed order,
// the tail padded with values that add nothing), whatever the row's place in memory.
// Internal to //kernels/cpu.
#ifndef KERNELS_CPU_NORMALIZATION_UTIL_H_
#define KERNELS_CPU_NORMALIZATION_UTIL_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "kernels/cpu/float8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/vector_math.h"

namespace oneflow {
namespace cpu {

// max_j x_j (NaNs are skipped, as `x > max ? x : max` skips them).
inline float RowMax(const float* x, int64_t n) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  Float8 even = Splat<Float8>(kLowest), odd = even;
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    even = Max(Load(x + j), even);
    odd = Max(Load(x + j + kLanes), odd);
  }
  if (j + kLanes <= n) {
    even = Max(Load(x + j), even);
    j += kLanes;
  }
  if (j < n) odd = Max(LoadPartial(x + j, n - j, kLowest), odd);
  return Max(Max(even, odd));
}

// The exponential passes below run on a row the max pass brought into the L1 cache, so
// the memory would idle meanwhile: they also prefetch `next` (the next row's first
// element, or x itself for the last row) into the L2 cache, one line per two vectors.
inline void PrefetchAt(const float* next, int64_t j) { __builtin_prefetch(next + j, 0, 2); }

// Asks for the lines of the output row `row` (n floats) in the exclusive state ahead of
// the stores (into L2): a store to a line not in the cache must first read the line, and
// these reads stall the stores of a row written right after arithmetic on the L1 cache.
// layer_norm and its gradient call it for the next row's output at the start of each row
// (13% and 6% faster on [16384, 1024]); in the softmax kernels it made things slower
// (by 10-20%), and they do without.
inline void PrefetchForWriting(float* row, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) __builtin_prefetch(row + j, 1, 2);
}

// sum_j exp(x_j - max), the exponentials stored in out.
inline float ExpShifted(const float* x, int64_t n, float max, float* out, const float* next) {
  Float8 sum{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    PrefetchAt(next, j);
    const Float8 e = ExpUpTo88(Load(x + j) - max);
    Store(out + j, e);
    sum += e;
  }
  if (j < n) {
    // Padding lanes hold -inf, whose exponential is 0.
    const Float8 e =
        ExpUpTo88(LoadPartial(x + j, n - j, -std::numeric_limits<float>::infinity()) - max);
    StorePartial(out + j, n - j, e);
    sum += e;
  }
  return Sum(sum);
}

// sum_j exp(x_j - max) without storing the exponentials.
inline float SumExpShifted(const float* x, int64_t n, float max, const float* next) {
  Float8 even{}, odd{};
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    PrefetchAt(next, j);
    even += ExpUpTo88(Load(x + j) - max);
    odd += ExpUpTo88(Load(x + j + kLanes) - max);
  }
  if (j + kLanes <= n) {
    even += ExpUpTo88(Load(x + j) - max);
    j += kLanes;
  }
  // Padding lanes hold -inf, whose exponential is 0.
  if (j < n)
    odd += ExpUpTo88(LoadPartial(x + j, n - j, -std::numeric_limits<float>::infinity()) - max);
  return Sum(even + odd);
}

inline float RowSum(const float* x, int64_t n) {
  return SumOf(x, n, 0.0f, [](Float8 v) { return v; });
}

inline float RowDot(const float* x, const float* y, int64_t n) {
  Float8 sum{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) sum += Load(x + j) * Load(y + j);
  if (j < n) sum += LoadPartial(x + j, n - j, 0.0f) * LoadPartial(y + j, n - j, 0.0f);
  return Sum(sum);
}

struct RowMoments {
  float mean = 0;
  float rstd = 0;  // 1 / sqrt(variance + epsilon)
};

// Mean and reciprocal standard deviation of a row of n > 0 values, in two passes; the
// second, on the row the first brought into the L1 cache, prefetches `next` (as above).
inline RowMoments Moments(const float* x, int64_t n, float epsilon, const float* next) {
  const float mean = RowSum(x, n) / static_cast<float>(n);
  auto square = [mean](Float8 v) { return (v - mean) * (v - mean); };
  // Two accumulators, as SumOf.
  Float8 even{}, odd{};
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    PrefetchAt(next, j);
    even += square(Load(x + j));
    odd += square(Load(x + j + kLanes));
  }
  if (j + kLanes <= n) {
    even += square(Load(x + j));
    j += kLanes;
  }
  // Padding lanes hold the mean: they add 0.
  if (j < n) odd += square(LoadPartial(x + j, n - j, mean));
  return {mean, 1.0f / std::sqrt(Sum(even + odd) / static_cast<float>(n) + epsilon)};
}

// A class index must lie in [0, classes).
template <typename Index>
absl::Status CheckClass(const char* kernel, Index label, int64_t row, int64_t classes) {
  if (label >= 0 && label < classes) return absl::OkStatus();
  return KernelError(kernel, "label ", label, " at index ", row, " is out of range; valid: 0..",
                     classes - 1);
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_NORMALIZATION_UTIL_H_
