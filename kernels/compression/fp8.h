// FP8 <-> float32 conversions: E4M3 and E5M2 as in the OCP 8-bit floating point
// specification (and NVIDIA's __nv_fp8_e4m3 / __nv_fp8_e5m2).
//
//   E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits. Largest finite 448 (0x7E),
//         smallest normal 2^-6, subnormals k * 2^-9. No infinities; 0x7F/0xFF are NaN.
//   E5M2: sign, 5 exponent bits (bias 15), 2 mantissa bits. Largest finite 57344 (0x7B),
//         smallest normal 2^-14, subnormals k * 2^-16; 0x7C/0xFC are +-Inf, 0x7D..0x7F
//         (and the negative twins) NaN.
//
// float -> FP8 rounds to nearest, ties to even, and saturates ("satfinite"): every finite
// value beyond the largest, and +-Inf, become +-largest finite; NaN becomes the NaN code
// 0x7F with the input's sign bit; -0 stays -0 (0x80). FP8 -> float is exact (every FP8
// value is a float). fp8_test checks all 256 codes against a decode written from the
// definition, every rounding tie, and the bulk forms against the scalar ones.
//
// The codecs call the eight-lane forms (FloatToE4M3Lanes, ...) inside their group loops;
// each computes bit for bit what the scalar form does, lane by lane.
#ifndef KERNELS_COMPRESSION_FP8_H_
#define KERNELS_COMPRESSION_FP8_H_

#include <cstdint>

#include "kernels/compression/lanes.h"

namespace oneflow {

constexpr float kE4M3Max = 448.0f;
constexpr float kE5M2Max = 57344.0f;

enum class Fp8Format { kE4M3, kE5M2 };

uint8_t FloatToE4M3(float value);
uint8_t FloatToE5M2(float value);
float E4M3ToFloat(uint8_t code);
float E5M2ToFloat(uint8_t code);

// out[i] = FloatToE4M3(in[i]) etc. for i in [0, count), vectorized.
void FloatsToFp8(Fp8Format format, const float* in, int64_t count, uint8_t* out);
void Fp8ToFloats(Fp8Format format, const uint8_t* in, int64_t count, float* out);

namespace compression {

// The parameters of one format, for the conversion templates below.
struct E4M3Traits {
  static constexpr int kMantissaBits = 3;
  static constexpr int kBias = 7;
  static constexpr uint32_t kMaxCode = 0x7E;
  static constexpr float kMax = kE4M3Max;
  // Below the smallest normal (2^-6) a float rounds to a multiple of 2^-9 when added to
  // 2^14, whose float ulp is 2^-9; the code is then the difference of the bit patterns.
  static constexpr uint32_t kSmallestNormalBits = (127 - 6) << 23;
  static constexpr float kSubnormalMagic = 16384.0f;  // 2^14
  static constexpr float kSubnormalStep = 1.0f / 512;  // 2^-9
};
struct E5M2Traits {
  static constexpr int kMantissaBits = 2;
  static constexpr int kBias = 15;
  static constexpr uint32_t kMaxCode = 0x7B;
  static constexpr float kMax = kE5M2Max;
  static constexpr uint32_t kSmallestNormalBits = (127 - 14) << 23;
  static constexpr float kSubnormalMagic = 128.0f;         // 2^7, float ulp 2^-16
  static constexpr float kSubnormalStep = 1.0f / 65536;  // 2^-16
};

// float -> code, scalar. Normal range: round the float's 23-bit mantissa to kMantissaBits
// (add half an ulp minus one plus the lowest kept bit: nearest, ties to even; a carry
// into the exponent is the correct next binade), then rebias the exponent. Saturation is
// a min on the code, which also catches +-Inf (exponent 255 maps far above kMaxCode).
template <typename Traits>
inline uint8_t FloatToFp8(float value) {
  constexpr int kDrop = 23 - Traits::kMantissaBits;
  const uint32_t bits = FloatBits(value);
  const uint32_t sign = (bits >> 24) & 0x80;
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return static_cast<uint8_t>(sign | 0x7F);  // NaN
  uint32_t code;
  if (magnitude < Traits::kSmallestNormalBits) {
    const float rounded = BitsFloat(magnitude) + Traits::kSubnormalMagic;
    code = FloatBits(rounded) - FloatBits(Traits::kSubnormalMagic);
  } else {
    const uint32_t rounded = magnitude + ((1u << (kDrop - 1)) - 1) + ((magnitude >> kDrop) & 1);
    code = (rounded >> kDrop) - (static_cast<uint32_t>(127 - Traits::kBias) << Traits::kMantissaBits);
    if (code > Traits::kMaxCode) code = Traits::kMaxCode;
  }
  return static_cast<uint8_t>(sign | code);
}

#if defined(__GNUC__)
// The same as FloatToFp8 on eight lanes; the codes in the low byte of each lane. The
// arithmetic is unsigned (it wraps for NaN patterns, which are then replaced); the
// comparisons are signed, on values below 2^31, because AVX2 compares only signed lanes.
template <typename Traits>
inline U32x8 FloatToFp8Lanes(F32x8 value) {
  constexpr int kDrop = 23 - Traits::kMantissaBits;
  const U32x8 bits = AsUints(value);
  const U32x8 sign = (bits >> 24) & 0x80;
  const U32x8 magnitude = bits & 0x7FFFFFFF;
  const I32x8 signed_magnitude = (I32x8)magnitude;
  const U32x8 subnormal = AsUints(AsFloats(magnitude) + Traits::kSubnormalMagic) -
                              FloatBits(Traits::kSubnormalMagic);
  const U32x8 rounded = magnitude + ((1u << (kDrop - 1)) - 1) + ((magnitude >> kDrop) & 1);
  I32x8 normal = (I32x8)((rounded >> kDrop) - (static_cast<uint32_t>(127 - Traits::kBias)
                                                     << Traits::kMantissaBits));
  const I32x8 max_code = SplatInt(static_cast<int32_t>(Traits::kMaxCode));
  normal = normal < max_code ? normal : max_code;
  I32x8 code = signed_magnitude < static_cast<int32_t>(Traits::kSmallestNormalBits)
                      ? (I32x8)subnormal
                      : normal;
  code = signed_magnitude > 0x7F800000 ? SplatInt(0x7F) : code;
  return sign | (U32x8)code;
}
#endif

// code -> float, scalar. Normal codes: move exponent and mantissa into a float's fields
// and add the exponent bias difference; subnormal codes: k * step. No denormal floats
// are ever formed (some CPUs take microcode assists on them).
template <typename Traits>
inline float Fp8ToFloat(uint8_t code) {
  constexpr int kShift = 23 - Traits::kMantissaBits;
  const uint32_t magnitude = code & 0x7F;
  float value;
  if (magnitude < (1u << Traits::kMantissaBits)) {
    value = static_cast<float>(static_cast<int32_t>(magnitude)) * Traits::kSubnormalStep;
  } else {
    value = BitsFloat((magnitude << kShift) + (static_cast<uint32_t>(127 - Traits::kBias) << 23));
  }
  if (magnitude > Traits::kMaxCode) {
    // E4M3: only 0x7F (NaN). E5M2: 0x7C is Inf, above it NaN.
    value = (Traits::kMaxCode == 0x7B && magnitude == 0x7C) ? BitsFloat(0x7F800000)
                                                           : BitsFloat(0x7FC00000);
  }
  return BitsFloat(FloatBits(value) | (static_cast<uint32_t>(code & 0x80) << 24));
}

#if defined(__GNUC__)
// The same as Fp8ToFloat on eight lanes, from codes in the low byte of each lane.
template <typename Traits>
inline F32x8 Fp8ToFloatLanes(U32x8 code) {
  constexpr int kShift = 23 - Traits::kMantissaBits;
  const I32x8 magnitude = (I32x8)(code & 0x7F);
  const F32x8 subnormal =
      __builtin_convertvector(magnitude, F32x8) * Traits::kSubnormalStep;
  const I32x8 normal = (magnitude << kShift) + ((127 - Traits::kBias) << 23);
  I32x8 bits = magnitude < (1 << Traits::kMantissaBits) ? AsInts(subnormal) : normal;
  if (Traits::kMaxCode == 0x7B) {
    bits = magnitude == 0x7C ? SplatInt(0x7F800000) : bits;
    bits = magnitude > 0x7C ? SplatInt(0x7FC00000) : bits;
  } else {
    bits = magnitude > static_cast<int32_t>(Traits::kMaxCode) ? SplatInt(0x7FC00000) : bits;
  }
  return AsFloats(bits | (I32x8)((code & 0x80) << 24));
}
#endif

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_FP8_H_
