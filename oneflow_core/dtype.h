// Element types of tensors, and the 16- and 8-bit float storage formats.
//
// DType is the runtime's element type; proto::DataType is its wire form in a Job. The
// short names ("f32", "bf16", "f8e4m3", ...) are what users write in model files and
// flags and what error messages print.
//
// Float16, BFloat16, Float8E4M3 and Float8E5M2 are storage only: a value is held as its
// raw bits, and any arithmetic upcasts to float. They are the formats of compressed
// boxing, so conversions are exact (narrowing is correctly rounded to nearest, ties to
// even; widening is exact) and fast: the scalar functions are branch-free integer code
// inlined here, independent of the floating-point rounding mode and of FTZ/DAZ, and the
// bulk helpers are SIMD loops (F16C instructions where the target has them, else loops
// the compiler vectorizes) with bit-identical results.
#ifndef ONEFLOW_CORE_DTYPE_H_
#define ONEFLOW_CORE_DTYPE_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"

namespace oneflow {

enum class DType { kF32, kF16, kBF16, kI32, kI64, kU8, kF8E4M3, kF8E5M2 };

// Bytes per element: 4, 2, 2, 4, 8, 1, 1, 1 in the order of the enum.
int64_t SizeOf(DType dtype);

// True for f32, f16, bf16, f8e4m3 and f8e5m2; false for the integer types.
bool IsFloating(DType dtype);

// The short name: "f32", "f16", "bf16", "i32", "i64", "u8", "f8e4m3", "f8e5m2".
absl::string_view DTypeName(DType dtype);

// Inverse of DTypeName (exact, case-sensitive). Anything else is INVALID_ARGUMENT naming
// the text and the valid names:
//   unknown dtype 'f64'; valid: f32, f16, bf16, i32, i64, u8, f8e4m3, f8e5m2
absl::StatusOr<DType> ParseDType(absl::string_view name);

// The wire form used in proto::Job. Total: every DType has a proto value.
proto::DataType ToProto(DType dtype);

// Inverse of ToProto. DTYPE_INVALID (an unset field) and numbers this build does not
// know (a newer writer) are INVALID_ARGUMENT.
absl::StatusOr<DType> FromProto(proto::DataType dtype);

// ---------------------------------------------------------------------------------------
// Storage types. Each is the raw bit pattern, trivially copyable, with no padding.

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Has inf and NaN.
struct Float16 {
  uint16_t bits;
};
// bfloat16: the top half of an IEEE binary32 (1 sign, 8 exponent, 7 mantissa bits).
struct BFloat16 {
  uint16_t bits;
};
// OCP OFP8 E4M3 ("E4M3FN", cuda_fp8.h __NV_E4M3): 1 sign, 4 exponent (bias 7), 3 mantissa
// bits. No infinities; S.1111.111 is NaN, so the largest finite value is 448 (0x7E).
// Smallest subnormal 2^-9.
struct Float8E4M3 {
  uint8_t bits;
};
// OCP OFP8 E5M2 (cuda_fp8.h __NV_E5M2): 1 sign, 5 exponent (bias 15), 2 mantissa bits,
// IEEE-like: has inf (0x7C) and NaN. Largest finite value 57344 (0x7B). Smallest
// subnormal 2^-16.
struct Float8E5M2 {
  uint8_t bits;
};

// float -> storage, rounding to nearest with ties to even (subnormals included). NaN
// stays NaN: a quiet NaN with the input's sign and, for f16/bf16/e5m2, the top bits of
// its payload (so the float quiet NaN becomes 0x7E00, 0x7FC0, 0x7E; for f16 this is what
// the x86 F16C instruction gives); e4m3 has one NaN per sign, 0x7F / 0xFF. Non-NaN
// results equal cuda_fp8.h's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) for every
// float (checked exhaustively when this was written; NaN patterns may differ).
//
// Out of range values differ by format, on purpose:
//  - Float16 and BFloat16 follow IEEE: overflow becomes +-inf, inf stays inf.
//  - Float8E4M3 and Float8E5M2 SATURATE: anything beyond the largest finite value,
//    +-inf included, becomes +-448 (e4m3) or +-57344 (e5m2), as cuda_fp8.h does with
//    __NV_SATFINITE. These formats carry compressed boxing traffic (gradients,
//    activations) whose scale the sender does not control; one out-of-range element
//    turned into NaN/inf would poison a whole reduction on the receiver, while a
//    clamped one is merely imprecise. A consequence: e5m2's inf pattern does not round
//    trip (ToFloat8E5M2(ToFloat(inf)) is 57344).
inline Float16 ToFloat16(float value);
inline BFloat16 ToBFloat16(float value);
inline Float8E4M3 ToFloat8E4M3(float value);
inline Float8E5M2 ToFloat8E5M2(float value);

// storage -> float. Exact: every value of these formats is a float. NaN stays NaN:
// f16/e5m2 NaN is made quiet with sign and payload kept (as F16C does), e4m3 NaN becomes
// 0x7FC00000 with its sign, and bf16 is extended bit for bit (bits << 16).
inline float ToFloat(Float16 value);
inline float ToFloat(BFloat16 value);
inline float ToFloat(Float8E4M3 value);
inline float ToFloat(Float8E5M2 value);

// Bulk forms of the above for buffers of `n` elements (n >= 0); element i of `out` is
// the scalar conversion of element i of `in`. `in` and `out` must not overlap.
void ConvertToFloat16(const float* in, int64_t n, Float16* out);
void ConvertToBFloat16(const float* in, int64_t n, BFloat16* out);
void ConvertToFloat8E4M3(const float* in, int64_t n, Float8E4M3* out);
void ConvertToFloat8E5M2(const float* in, int64_t n, Float8E5M2* out);
void ConvertToFloat(const Float16* in, int64_t n, float* out);
void ConvertToFloat(const BFloat16* in, int64_t n, float* out);
void ConvertToFloat(const Float8E4M3* in, int64_t n, float* out);
void ConvertToFloat(const Float8E5M2* in, int64_t n, float* out);

// ---------------------------------------------------------------------------------------
// Implementation details.

namespace dtype_internal {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// A small binary float format with `E` exponent bits, `M` mantissa bits and bias `B`.
// kIeee: the all-ones exponent is inf/NaN (f16, e5m2); otherwise only the all-ones
// pattern is NaN (e4m3). kSaturate: finite overflow and inf clamp to the largest finite
// value instead of becoming inf.
template <int E, int M, int B, bool kIeee, bool kSaturate>
struct SmallFloat {
  static_assert(E + M <= 15 && M >= 1 && M <= 16, "format must fit below float");
  static constexpr int kShift = 23 - M;  // mantissa bits dropped
  static constexpr uint32_t kAbsMask = (1u << (E + M)) - 1;
  static constexpr uint32_t kMantissaMask = (1u << M) - 1;
  static constexpr uint32_t kInf = ((1u << E) - 1) << M;  // meaningful if kIeee
  static constexpr uint32_t kMaxFinite = kIeee ? kInf - 1 : kAbsMask - 1;
  static constexpr uint32_t kQuietNaN = kIeee ? kInf | (1u << (M - 1)) : kAbsMask;
  static constexpr uint32_t kOverflow = kSaturate ? kMaxFinite : kInf;
  // Float exponent offset between the formats, and float bits of the smallest normal.
  static constexpr uint32_t kRebias = uint32_t(127 - B) << 23;
  static constexpr uint32_t kMinNormal = uint32_t(127 + 1 - B) << 23;
  // For a float with biased exponent e (1 for float subnormals), the right shift that
  // turns its 24-bit significand into units of the smallest subnormal is kSubShift - e.
  static constexpr uint32_t kSubShift = uint32_t(150 + 1 - B - M);

  // Every path is computed and the result selected, so loops vectorize.
  static uint32_t FromFloat(float value) {
    const uint32_t u = FloatBits(value);
    const uint32_t sign = (u >> 31) << (E + M);
    const uint32_t a = u & 0x7FFFFFFFu;
    // Normal range: rebias the exponent, then drop kShift bits rounding to nearest
    // even. A carry out of the mantissa correctly bumps the exponent.
    uint32_t normal = (a - kRebias + ((1u << (kShift - 1)) - 1) + ((a >> kShift) & 1u)) >> kShift;
    normal = normal < kOverflow ? normal : kOverflow;
    // Subnormal range: shift the 24-bit significand (implicit bit included) right,
    // rounding to nearest even the same way. Shifts of 25 or more give 0, so clamping at
    // 31 is exact; the select below discards this path whenever the shift is out of its
    // range (it is then 0 or wrapped, harmless in unsigned arithmetic).
    const uint32_t exponent = a >> 23;
    const uint32_t implicit = (exponent < 1u ? exponent : 1u) << 23;
    const uint32_t significand = (a & 0x7FFFFFu) | implicit;
    uint32_t shift = kSubShift - (exponent > 1u ? exponent : 1u);
    shift = shift < 31u ? shift : 31u;
    const uint32_t subnormal =
        (significand + (((1u << shift) >> 1) - 1) + ((significand >> shift) & 1u)) >> shift;
    const uint32_t nan = kIeee ? kQuietNaN | ((a >> kShift) & kMantissaMask) : kQuietNaN;
    const uint32_t magnitude = a > 0x7F800000u ? nan : (a < kMinNormal ? subnormal : normal);
    return magnitude | sign;
  }

  // One step of a binary search for the leading one of a nonzero M-bit `x`: if its top
  // kStep bits are zero, shift it up by kStep. Steps 8, 4, 2, 1 (those below M) leave
  // the leading one at bit M-1, with `shift` the total distance moved (M <= 16).
  template <uint32_t kStep>
  static void NormalizeStep(uint32_t& x, uint32_t& shift) {
    if constexpr (kStep < M) {
      const uint32_t top_clear = x < (1u << (M - kStep));
      x = top_clear ? x << kStep : x;
      shift += top_clear ? kStep : 0u;
    }
  }

  static float ToFloat(uint32_t bits) {
    const uint32_t sign = ((bits >> (E + M)) & 1u) << 31;
    const uint32_t a = bits & kAbsMask;
    uint32_t result = (a << kShift) + kRebias;
    if (kIeee) {
      result = a >= kInf ? ((a << kShift) | 0x7F800000u) : result;  // inf, NaN payload
      result = a > kInf ? (result | 0x00400000u) : result;          // NaN made quiet
    } else {
      result = a == kAbsMask ? 0x7FC00000u : result;
    }
    // Subnormal, a * 2^(1-B-M): normalize by shifting the leading one up to bit M-1
    // (a branch-free binary search on its position, in integer code so that GCC does
    // not sink a possibly trapping float conversion into a branch and stop vectorizing).
    uint32_t normalized = a;
    uint32_t shift = 0;
    NormalizeStep<8>(normalized, shift);
    NormalizeStep<4>(normalized, shift);
    NormalizeStep<2>(normalized, shift);
    NormalizeStep<1>(normalized, shift);
    // The leading one lands on bit 23 and adds 1 to the exponent field.
    const uint32_t subnormal = (normalized << (24 - M)) + (uint32_t(126 - B) << 23) - (shift << 23);
    result = a <= kMantissaMask ? subnormal : result;
    result = a == 0 ? 0u : result;
    return BitsToFloat(result | sign);
  }
};

using Float16Format = SmallFloat<5, 10, 15, /*kIeee=*/true, /*kSaturate=*/false>;
using E4M3Format = SmallFloat<4, 3, 7, /*kIeee=*/false, /*kSaturate=*/true>;
using E5M2Format = SmallFloat<5, 2, 15, /*kIeee=*/true, /*kSaturate=*/true>;

}  // namespace dtype_internal

inline Float16 ToFloat16(float value) {
  return Float16{static_cast<uint16_t>(dtype_internal::Float16Format::FromFloat(value))};
}

inline BFloat16 ToBFloat16(float value) {
  const uint32_t u = dtype_internal::FloatBits(value);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x0040u;
  return BFloat16{static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded)};
}

inline Float8E4M3 ToFloat8E4M3(float value) {
  return Float8E4M3{static_cast<uint8_t>(dtype_internal::E4M3Format::FromFloat(value))};
}

inline Float8E5M2 ToFloat8E5M2(float value) {
  return Float8E5M2{static_cast<uint8_t>(dtype_internal::E5M2Format::FromFloat(value))};
}

inline float ToFloat(Float16 value) { return dtype_internal::Float16Format::ToFloat(value.bits); }

inline float ToFloat(BFloat16 value) {
  return dtype_internal::BitsToFloat(static_cast<uint32_t>(value.bits) << 16);
}

inline float ToFloat(Float8E4M3 value) { return dtype_internal::E4M3Format::ToFloat(value.bits); }

inline float ToFloat(Float8E5M2 value) { return dtype_internal::E5M2Format::ToFloat(value.bits); }

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit storage");
static_assert(sizeof(Float8E4M3) == 1 && sizeof(Float8E5M2) == 1, "8-bit storage");
static_assert(std::is_trivially_copyable<Float16>::value &&
                  std::is_trivially_copyable<BFloat16>::value &&
                  std::is_trivially_copyable<Float8E4M3>::value &&
                  std::is_trivially_copyable<Float8E5M2>::value,
              "storage types are raw bits");

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DTYPE_H_
