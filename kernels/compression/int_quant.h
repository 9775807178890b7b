// Symmetric integer quantization of one group: int8 (codes -127..127, one per byte) and
// int4 (codes -7..7, two per byte), given the group's scale (group_scale.h).
//
//   encode: code = clamp(round_nearest_even(x * inverse), -Q, Q)     Q = 127 or 7
//           (stochastic rounding: clamp(floor(x * inverse + u), -Q, Q), u in
//           [0, 1) from RoundingNoise at the element's logical index: unbiased, so the
//           rounding errors of many ranks and steps average out instead of adding up)
//   decode: value = code * scale
// -128 and -8 are never produced, so the codes are symmetric around zero.
//
// int4 packing: element k of a buffer's element stream is nibble k of its payload, the
// low nibble of byte k / 2 for even k and the high nibble for odd k, two's complement.
// A buffer with an odd element count ends in a byte whose high nibble is zero.
#ifndef KERNELS_COMPRESSION_INT_QUANT_H_
#define KERNELS_COMPRESSION_INT_QUANT_H_

#include <cstdint>

#include "kernels/compression/group_scale.h"
#include "kernels/compression/rounding_noise.h"

namespace oneflow {
namespace compression {

constexpr float kInt8MaxCode = 127.0f;
constexpr float kInt4MaxCode = 7.0f;

// `noise` null: nearest-even rounding; otherwise stochastic, element i keyed by
// noise_index + i.
void QuantizeInt8(const float* x, int64_t n, float inverse, int8_t* codes, const RoundingNoise* noise,
                  uint64_t noise_index);
void DequantizeInt8(const int8_t* codes, int64_t n, float scale, DecodeMode mode, float* out);

// Writes the nibbles of elements [position, position + n) of `payload`'s stream. When
// `position` is odd, the low nibble of byte position / 2 must already hold element
// position - 1 with a zero high nibble (the previous group wrote it); every other byte
// touched is written whole. `noise` null: nearest-even rounding; otherwise stochastic,
// element i keyed by noise_index + i.
void QuantizeInt4(const float* x, int64_t n, float inverse, uint8_t* payload, int64_t position,
                  const RoundingNoise* noise, uint64_t noise_index);
// Writes zero codes for elements [position, position + n), under QuantizeInt4's rules
// (a group whose scale is NaN carries zero codes).
void ZeroInt4(uint8_t* payload, int64_t position, int64_t n);
void DequantizeInt4(const uint8_t* payload, int64_t position, int64_t n, float scale,
                    DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_INT_QUANT_H_
