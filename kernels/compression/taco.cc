#include "kernels/compression/taco.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/compression/fp8_quant.h"
#include "kernels/compression/hadamard.h"
#include "kernels/compression/lanes.h"

namespace oneflow {
namespace compression {
namespace {

constexpr float kMinPreScale = 1e-3f;
constexpr float kMaxPreScale = 1e3f;
constexpr float kMinQuantizationScale = 1e-12f;
constexpr float kMaxQuantizationScale = 1e6f;
constexpr float kMeanSquareEpsilon = 1e-6f;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

float Clamp(float value, float low, float high) {
  return value < low ? low : (value > high ? high : value);
}

// sum of x[i]^2 as eight partial sums (i mod 8) added ((0+1)+(2+3))+((4+5)+(6+7)).
float SumOfSquares(const float* x, int64_t n) {
  float partial[kLanes] = {};
  int64_t i = 0;
#if defined(__GNUC__)
  F32x8 lanes{};
  for (; i + kLanes <= n; i += kLanes) {
    const F32x8 v = LoadFloats(x + i);
    lanes += v * v;
  }
  for (int lane = 0; lane < kLanes; ++lane) partial[lane] = lanes[lane];
#endif
  for (; i < n; ++i) partial[i % kLanes] += x[i] * x[i];
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

void Scale(const float* x, int64_t n, float factor, float* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + kLanes <= n; i += kLanes) StoreFloats(out + i, LoadFloats(x + i) * factor);
#endif
  for (; i < n; ++i) out[i] = x[i] * factor;
}

}  // namespace

// Power-of-two groups (all but a tensor's odd-sized last group) fold the normalisation
// and both scales into one factor on the unnormalised transform t = WHT(x):
//   y = WHT(s_a x) / sqrt(n) = t * (s_a / sqrt(n)),   x' = WHT(q) * (s_q / (s_a sqrt(n))),
// the same arithmetic as the recipe up to float rounding, without three passes over the
// group. Other lengths take the recipe literally, with the piecewise rotation.
TacoScales EncodeTacoGroup(const float* x, int64_t n, float* scratch, uint8_t* codes) {
  const float mean_square = SumOfSquares(x, n) / static_cast<float>(n);
  const float pre_scale =
      Clamp(kE4M3Max / std::sqrt(mean_square + kMeanSquareEpsilon), kMinPreScale, kMaxPreScale);
  float factor;  // y = scratch * factor
  if (IsPowerOfTwo(n)) {
    FastWalshHadamard(x, scratch, n);
    factor = pre_scale * HadamardNorm(n);
  } else {
    Scale(x, n, pre_scale, scratch);
    HadamardRotate(scratch, n);
    factor = 1.0f;
  }
  const GroupRange range = MeasureGroup(scratch, n);
  if (!range.finite || !(pre_scale == pre_scale)) {
    std::memset(codes, 0, n);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return TacoScales{nan, nan};
  }
  const float quantization =
      Clamp(range.abs_max * factor / kE4M3Max, kMinQuantizationScale, kMaxQuantizationScale);
  QuantizeFp8(Fp8Format::kE4M3, scratch, n, factor / quantization, codes);
  return TacoScales{quantization, pre_scale};
}

void DecodeTacoGroup(const uint8_t* codes, int64_t n, const TacoScales& scales, float* scratch,
                     DecodeMode mode, float* out) {
  if (IsPowerOfTwo(n)) {
    DequantizeFp8(Fp8Format::kE4M3, codes, n, 1.0f, DecodeMode::kStore, scratch);
    FastWalshHadamard(scratch, n);
    EmitScaled(scratch, n, scales.quantization * HadamardNorm(n) / scales.pre_scale, mode, out);
    return;
  }
  DequantizeFp8(Fp8Format::kE4M3, codes, n, scales.quantization, DecodeMode::kStore, scratch);
  HadamardRotate(scratch, n);
  EmitScaled(scratch, n, 1.0f / scales.pre_scale, mode, out);
}

}  // namespace compression
}  // namespace oneflow
