// Integer quantization of one group: int8 (codes -127..127, one per byte) and int4
// (codes -8..7, two per byte), given the group's scale.
//
//   encode: code = clamp(round_nearest_even(x * inverse), lowest, Q)   Q = 127 or 7
//           (stochastic rounding: clamp(floor(x * inverse + u), -Q, Q), u in
//           [0, 1) from RoundingNoise at the element's logical index: unbiased, so the
//           rounding errors of many ranks and steps average out instead of adding up)
//   decode: value = code * scale
// int8 is symmetric (lowest = -127; -128 is never produced), and so is stochastically
// rounded int4 (its scale is the group's largest magnitude over 7, group_scale.h).
// Int4 rounded to nearest with CodecOptions::fitted_int4_scale (codec.h; the compiler sets
// it on gradients' steps when CompileOptions::fit_int4_gradient_scale asks, off by
// default) takes its scale from ChooseInt4Scale: of a few candidates from
// max|x| / 7 down to max|x| / 10, the one whose codes miss the group by the least squared
// error, and uses -8 where the scale allows it (lowest = -8 when 8 * scale <= max|x|).
// Why: with max|x| / 7 one outlier stretches the step of its whole group; clipping the
// outlier a little buys every other element a finer step. On the gpt example's defaults
// (AdamW, 2 nodes x 2 devices, int4 G=32 on the cross-node gradient reductions, 200
// iterations, 8 seeds) the codec's relative error fell from 0.095 to 0.085 and the
// final-loss gap to dense from +0.80% to +0.47%; on a tiny gpt at a large learning rate it
// trained worse (docs/sbp_and_boxing.md, "The int4 scale chosen by error").
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

// The scale ChooseInt4Scale picked and the lowest code it allows (-8 or -7).
struct Int4Scale {
  GroupScale scale;
  float lowest_code = -kInt4MaxCode;
};

// The divisors ChooseInt4Scale tries, max|x| / d for each d: 7 (the group's largest
// magnitude exactly representable, as int8 and the FP8 formats scale) to 10. Seven
// candidates: the four of {7, 8, 9, 10} alone ended +0.52% above dense on the bench above
// (against +0.47%), and a finer eleven ended +0.49%.
inline constexpr float kInt4Divisors[] = {7.0f, 7.5f, 8.0f, 8.5f, 9.0f, 9.5f, 10.0f};

// The scale of one int4 group rounded to nearest: the values are x[i] * factor (a rotated
// group carries its 1 / sqrt(G) in `factor`, codec.cc), `range` is MeasureGroup(x, n).
// For each divisor d, scale = ScaleFor(max|x * factor|, d) (so d * scale <= max|x *
// factor|) and lowest code -8 when d >= 8, else -7; the one with the smallest sum of
// (code * scale - x * factor)^2 wins, the first on a tie. Every decoded value stays within
// the group's largest magnitude. A non-finite or all-but-zero group gets ScaleFor's scale
// (NaN or 0) as every codec does. inverse is d / max|x * factor| * factor: QuantizeInt4
// multiplies x, not x * factor.
Int4Scale ChooseInt4Scale(const float* x, int64_t n, float factor, const GroupRange& range);

// Writes the nibbles of elements [position, position + n) of `payload`'s stream. When
// `position` is odd, the low nibble of byte position / 2 must already hold element
// position - 1 with a zero high nibble (the previous group wrote it); every other byte
// touched is written whole. `noise` null: nearest-even rounding, codes clamped to
// [lowest_code, 7] (-8 or -7; ChooseInt4Scale); otherwise stochastic, element i keyed by
// noise_index + i, codes in [-7, 7].
void QuantizeInt4(const float* x, int64_t n, float inverse, uint8_t* payload, int64_t position,
                  const RoundingNoise* noise, uint64_t noise_index,
                  float lowest_code = -kInt4MaxCode);
// Writes zero codes for elements [position, position + n), under QuantizeInt4's rules
// (a group whose scale is NaN carries zero codes).
void ZeroInt4(uint8_t* payload, int64_t position, int64_t n);
void DequantizeInt4(const uint8_t* payload, int64_t position, int64_t n, float scale,
                    DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_INT_QUANT_H_
