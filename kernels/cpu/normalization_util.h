// Row primitives shared by the normalization kernels and their gradients, on F32x8
// (f32x8.h): each sum is a function of the row alone (lanes combined in a fixed order,
// the tail padded with values that add nothing), whatever the row's place in memory.
// Internal to //kernels/cpu.
#ifndef KERNELS_CPU_NORMALIZATION_UTIL_H_
#define KERNELS_CPU_NORMALIZATION_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/vector_math.h"

namespace oneflow {
namespace cpu {

// max_j x_j (NaNs are skipped, as `x > max ? x : max` skips them).
inline float RowMax(const float* x, int64_t n) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  F32x8 even = Splat<F32x8>(kLowest), odd = even;
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
  F32x8 sum{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    PrefetchAt(next, j);
    const F32x8 e = ExpUpTo88(Load(x + j) - max);
    Store(out + j, e);
    sum += e;
  }
  if (j < n) {
    // Padding lanes hold -inf, whose exponential is 0.
    const F32x8 e =
        ExpUpTo88(LoadPartial(x + j, n - j, -std::numeric_limits<float>::infinity()) - max);
    StorePartial(out + j, n - j, e);
    sum += e;
  }
  return Sum(sum);
}

#if defined(OF_AVX512_CODE)
// The low and the high 8 lanes of a 512-bit vector. (Not through the cast and extract
// intrinsics: GCC 12 warns, wrongly, about their undefined pass-through operands.)
OF_TARGET_AVX512_INLINE inline F32x8 LowHalf(__m512 v) {
  const F32x16 lanes = v;
  return __builtin_shufflevector(lanes, lanes, 0, 1, 2, 3, 4, 5, 6, 7);
}
OF_TARGET_AVX512_INLINE inline F32x8 HighHalf(__m512 v) {
  const F32x16 lanes = v;
  return __builtin_shufflevector(lanes, lanes, 8, 9, 10, 11, 12, 13, 14, 15);
}

// ExpShifted on 512-bit vectors where CpuHasAvx512() (cpu_features.h): the same
// exponentials bit for bit (ExpUpTo88x16), and the same sum, each vector's two halves
// added in order to the 8-lane sum as ExpShifted adds its vectors; the last n % 16
// elements on F32x8. 0.40-0.44 ns per element for sparse_softmax_cross_entropy_grad on
// [4096, 4096] against 0.47-0.52; softmax on [16384, 1024] 0.36-0.37 against 0.45-0.46.
OF_TARGET_AVX512 inline float ExpShifted512(const float* x, int64_t n, float max, float* out,
                                            const float* next) {
  const int64_t whole = n / 16 * 16;
  const __m512 shift = _mm512_set1_ps(max);
  F32x8 sum{};
  for (int64_t j = 0; j < whole; j += 16) {
    PrefetchAt(next, j);
    const __m512 e = ExpUpTo88x16(_mm512_sub_ps(_mm512_loadu_ps(x + j), shift));
    _mm512_storeu_ps(out + j, e);
    sum += LowHalf(e);
    sum += HighHalf(e);
  }
  for (int64_t j = whole; j < n; j += kLanes) {
    const int64_t count = std::min<int64_t>(kLanes, n - j);
    // Padding lanes hold -inf, whose exponential is 0.
    const F32x8 e = ExpUpTo88(
        (count == kLanes ? Load(x + j)
                         : LoadPartial(x + j, count, -std::numeric_limits<float>::infinity())) -
        max);
    StorePartial(out + j, count, e);
    sum += e;
  }
  return Sum(sum);
}
#endif

// sum_j exp(x_j - max) without storing the exponentials.
inline float SumExpShifted(const float* x, int64_t n, float max, const float* next) {
  F32x8 even{}, odd{};
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

// Lane sums of exp(x_j - max) over x[0, n) (ExpForSum: for the cross-entropy's
// log-sum-exp), and in the same loop the maximum of next[0, next_n) (RowMax's, exactly:
// a maximum does not depend on the order of its terms), for the caller to take the next
// stretch of its row with: a maximum pass over data fresh from memory, on its own, waits
// on the memory while the exponentials' arithmetic does not, and here its loads overlap
// that arithmetic. One sum and one maximum, a vector at a time: the exponential's
// constants take most of the 16 registers, and with two of each (and two vectors a step)
// GCC kept the sums on the stack, a store and a load in every sum's chain.
//
// From element `from` (a multiple of 8) on, adding to `sum` and `maximum`: the AVX-512
// version below does the 16-element steps and hands the rest, and its two 8-lane halves,
// to this one.
inline F32x8 SumExpShiftedAndMaxFrom(const float* x, int64_t n, float max, const float* next,
                                      int64_t next_n, int64_t from, F32x8 sum, F32x8 maximum,
                                      float* next_max) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  const int64_t both = std::min(n, next_n) / kLanes * kLanes;
  int64_t j = from;
  for (; j < both; j += kLanes) {
    sum += ExpForSum(Load(x + j) - max);
    maximum = Max(Load(next + j), maximum);
  }
  // Padding lanes hold -inf, whose exponential is 0 and which no maximum takes.
  for (int64_t i = j; i < n; i += kLanes) {
    sum += ExpForSum((i + kLanes <= n ? Load(x + i) : LoadPartial(x + i, n - i, kLowest)) - max);
  }
  for (int64_t i = j; i < next_n; i += kLanes) {
    maximum =
        Max(i + kLanes <= next_n ? Load(next + i) : LoadPartial(next + i, next_n - i, kLowest),
            maximum);
  }
  *next_max = Max(maximum);
  return sum;
}

inline F32x8 SumExpShiftedAndMax(const float* x, int64_t n, float max, const float* next,
                                  int64_t next_n, float* next_max) {
  return SumExpShiftedAndMaxFrom(x, n, max, next, next_n, 0, F32x8{},
                                 Splat<F32x8>(-std::numeric_limits<float>::infinity()), next_max);
}

#if defined(OF_AVX512_CODE)
// SumExpShiftedAndMax on 512-bit vectors where CpuHasAvx512() (cpu_features.h), the
// same sum bit for bit: ExpForSum16's lanes are ExpForSum's, and each vector's two halves
// are added in order to the 8-lane sum, as the 8-lane loop adds its vectors. 0.22 ns per
// element for sparse_softmax_cross_entropy on [4096, 4096] against 0.26.
OF_TARGET_AVX512 inline F32x8 SumExpShiftedAndMax512(const float* x, int64_t n, float max,
                                                      const float* next, int64_t next_n,
                                                      float* next_max) {
  const int64_t both = std::min(n, next_n) / 16 * 16;
  const __m512 shift = _mm512_set1_ps(max);
  F32x8 sum{};
  __m512 maximum = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < both; j += 16) {
    const __m512 e = ExpForSum16(_mm512_sub_ps(_mm512_loadu_ps(x + j), shift));
    sum += LowHalf(e);
    sum += HighHalf(e);
    maximum = _mm512_mask_max_ps(maximum, 0xFFFF, _mm512_loadu_ps(next + j), maximum);
  }
  const F32x8 maximum8 = Max(LowHalf(maximum), HighHalf(maximum));
  return SumExpShiftedAndMaxFrom(x, n, max, next, next_n, both, sum, maximum8, next_max);
}
#endif

inline float RowSum(const float* x, int64_t n) {
  return SumOf(x, n, 0.0f, [](F32x8 v) { return v; });
}

inline float RowDot(const float* x, const float* y, int64_t n) {
  F32x8 sum{};
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
  auto square = [mean](F32x8 v) { return (v - mean) * (v - mean); };
  // Two accumulators, as SumOf.
  F32x8 even{}, odd{};
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

// Scratch space for n floats, placed in `storage` at 2 KiB plus `shift` bytes from `near`
// modulo 4 KiB. Why: a load whose address matches a preceding store's in the low 12 bits
// waits for that store (the core checks those bits first: "4K aliasing"), and row
// buffers, their scratch sums and malloc'ed vectors often sit at the same offset within a
// page (the kernels' row loops load and store them at the same column): in
// layer_norm_grad that cost 0.15-0.25 ns per element. Half a page away, the streams
// never meet within a loop's reach.
inline float* ScratchAwayFrom(std::vector<float>* storage, int64_t n, const void* near,
                              int64_t shift = 0) {
  storage->assign(static_cast<size_t>(n) + 1024, 0.0f);
  const uintptr_t base = reinterpret_cast<uintptr_t>(storage->data());
  const uintptr_t want = reinterpret_cast<uintptr_t>(near) + 2048 + static_cast<uintptr_t>(shift);
  const uintptr_t skip = (want - base) % 4096 / sizeof(float);  // Whole floats: both are.
  return storage->data() + skip;
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
