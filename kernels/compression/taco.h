// TACO's FP8 codec for tensor-parallel activations (arXiv 2604.24088; REFERENCES.md),
// one group of n <= 2048 elements (n = G except for a tensor's last group):
//
//   s_a = clamp(448 / sqrt(mean(x^2) + 1e-6), 1e-3, 1e3)      adaptive pre-scale
//   y   = H(s_a * x)                                           H = hadamard.h's rotation
//                                                              (WHT_G / sqrt(G))
//   s_q = clamp(max|y| / 448, 1e-12, 1e6)
//   q   = e4m3(clamp(y / s_q, -448, 448))                      (the saturating conversion)
//   decode: x' = H(q * s_q) / s_a
//
// The pre-scale brings every group near the same range before the rotation and FP8
// (TACO keeps that intermediate in low precision; here it is f32, so s_a matters through
// the clamps only: s_q's bounds limit the representable range to |y| <= 448 * 1e6).
// mean(x^2) is summed in eight fixed partial sums (element i into sum i mod 8), added
// pairwise in a fixed order, in float, so every machine gets the same s_a.
// A group whose rotated values are not all finite (a NaN or Inf in x, or an overflow)
// gets s_q = s_a = NaN and zero codes, and decodes to NaN, like the other codecs.
#ifndef KERNELS_COMPRESSION_TACO_H_
#define KERNELS_COMPRESSION_TACO_H_

#include <cstdint>

#include "kernels/compression/group_scale.h"

namespace oneflow {
namespace compression {

struct TacoScales {
  float quantization = 0.0f;  // s_q
  float pre_scale = 0.0f;     // s_a
};

// Encodes x[0, n) into n E4M3 codes; `scratch` holds n floats.
TacoScales EncodeTacoGroup(const float* x, int64_t n, float* scratch, uint8_t* codes);
// Decodes n codes into out (stored or added); `scratch` holds n floats.
void DecodeTacoGroup(const uint8_t* codes, int64_t n, const TacoScales& scales, float* scratch,
                     DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_TACO_H_
