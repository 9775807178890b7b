// bf16 on the wire (Codec::kBf16, codec.h): every element rounded to bfloat16 by itself,
// no groups and no scales, two bytes an element, bf16 bit patterns in host byte order back to
// back. This is Megatron's and FSDP's "gradients reduced in bf16" traffic; the compressed
// collectives (compressed_collectives.h) decode every contribution back to f32 before they
// add, so only the wire is bf16, never the sum.
//
// Rounding is oneflow_core/dtype.h's ToBFloat16 (the `cast` op's): round to nearest even,
// NaN stays NaN, +-Inf stays +-Inf, and a finite value beyond bf16's largest finite
// (3.3895e38) becomes +-Inf as IEEE rounding says. Decoding is exact (bf16 widens to f32
// bit for bit), so a round trip's relative error is at most 2^-8 per element (half an ulp of
// an 8-bit significand).
#ifndef KERNELS_COMPRESSION_BF16_CODEC_H_
#define KERNELS_COMPRESSION_BF16_CODEC_H_

#include <cstdint>

#include "kernels/compression/group_scale.h"

namespace oneflow {
namespace compression {

// Writes 2 * count bytes at `out` (any alignment).
void EncodeBf16(const float* input, int64_t count, uint8_t* out);

// out[i] = element i (kStore) or out[i] += element i (kAccumulate) of 2 * count bytes at
// `in` (any alignment).
void DecodeBf16(const uint8_t* in, int64_t count, DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_BF16_CODEC_H_
