// Row primitives shared by the normalization kernels and their gradients. Internal to
// //kernels/cpu, whose copts enable the `omp simd` reductions (vectorized sums).
#ifndef KERNELS_CPU_NORMALIZATION_UTIL_H_
#define KERNELS_CPU_NORMALIZATION_UTIL_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/vector_math.h"

namespace oneflow {
namespace cpu {

inline float RowMax(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < n; ++j) max = x[j] > max ? x[j] : max;
  return max;
}

// sum_j exp(x_j - max), the exponentials stored in out.
inline float ExpShifted(const float* x, int64_t n, float max, float* out) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    out[j] = ExpF(x[j] - max);
    sum += out[j];
  }
  return sum;
}

// sum_j exp(x_j - max) without storing the exponentials.
inline float SumExpShifted(const float* x, int64_t n, float max) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += ExpF(x[j] - max);
  return sum;
}

inline float RowSum(const float* x, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  return sum;
}

inline float RowDot(const float* x, const float* y, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += x[j] * y[j];
  return sum;
}

struct RowMoments {
  float mean = 0;
  float rstd = 0;  // 1 / sqrt(variance + epsilon)
};

// Mean and reciprocal standard deviation of a row of n > 0 values, in two passes.
inline RowMoments Moments(const float* x, int64_t n, float epsilon) {
  const float mean = RowSum(x, n) / static_cast<float>(n);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t j = 0; j < n; ++j) squares += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0f / std::sqrt(squares / static_cast<float>(n) + epsilon)};
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
