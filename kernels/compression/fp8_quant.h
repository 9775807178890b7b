// Scaled FP8 quantization of one group: code = fp8(x * inverse), value = float(code) *
// scale, with the group's scale from group_scale.h (max|x| maps to the format's largest
// finite value, 448 for E4M3 and 57344 for E5M2). The conversions round to nearest even
// and saturate (fp8.h), so a product that rounds a hair above the largest value stays
// finite.
#ifndef KERNELS_COMPRESSION_FP8_QUANT_H_
#define KERNELS_COMPRESSION_FP8_QUANT_H_

#include <cstdint>

#include "kernels/compression/fp8.h"
#include "kernels/compression/group_scale.h"  // DecodeMode

namespace oneflow {
namespace compression {

inline float Fp8MaxValue(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? kE4M3Max : kE5M2Max;
}

void QuantizeFp8(Fp8Format format, const float* x, int64_t n, float inverse, uint8_t* codes);
void DequantizeFp8(Fp8Format format, const uint8_t* codes, int64_t n, float scale,
                   DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_FP8_QUANT_H_
