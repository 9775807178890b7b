// Eight-lane vectors for the codec loops (private to kernels/compression).
//
// Written with the GCC/Clang vector extension, as oneflow_core/comm/reduce.cc does: one
// AVX register under -march=x86-64-v3, two SSE registers elsewhere, and plain code on
// any other target the compilers support. -O2's "very cheap" vectorizer leaves these
// loops scalar (unknown trip counts), so they are written out. Compilers without the
// extension (no __GNUC__) compile only the scalar forms. With AVX2, the conversions between
// bytes and lanes use its intrinsics (below).
//
// Every vector loop has a scalar twin that does the same IEEE operations in the same
// order per element (the package compiles with -ffp-contract=off, so no FMA merges a
// multiply and an add in one form and not the other). Which elements a loop handles in
// its vector body and which in its scalar tail therefore never changes a bit, and
// neither does the machine: a rank that decodes its own encoding gets its peers' bits.
#ifndef KERNELS_COMPRESSION_LANES_H_
#define KERNELS_COMPRESSION_LANES_H_

#include <cstdint>
#include <cstring>

#include "oneflow_core/simd_lanes.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace compression {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Round to nearest, ties to even, for |value| < 2^22: adding 1.5 * 2^23 leaves no
// fraction bits, so the FPU's default rounding (nearest-even) does the work, and
// subtracting it back is exact. Used on quantized values, |value| <= 448.
constexpr float kRoundingMagic = 12582912.0f;  // 1.5 * 2^23
inline float RoundNearestEven(float value) { return (value + kRoundingMagic) - kRoundingMagic; }

constexpr int64_t kLanes = 8;

#if defined(__GNUC__)
// Unaligned loads and stores (encoded buffers are byte streams; floats come from users).
inline F32x8 LoadFloats(const float* source) {
  F32x8 lanes;
  std::memcpy(&lanes, source, sizeof(lanes));
  return lanes;
}
inline void StoreFloats(float* destination, F32x8 lanes) {
  std::memcpy(destination, &lanes, sizeof(lanes));
}
inline F32x8 SplatFloat(float value) { return F32x8{} + value; }
inline I32x8 SplatInt(int32_t value) { return I32x8{} + value; }
inline I32x8 AsInts(F32x8 lanes) {
  I32x8 ints;
  std::memcpy(&ints, &lanes, sizeof(ints));
  return ints;
}
inline U32x8 AsUints(F32x8 lanes) {
  U32x8 uints;
  std::memcpy(&uints, &lanes, sizeof(uints));
  return uints;
}
inline F32x8 AsFloats(I32x8 lanes) {
  F32x8 floats;
  std::memcpy(&floats, &lanes, sizeof(floats));
  return floats;
}
inline F32x8 AsFloats(U32x8 lanes) {
  F32x8 floats;
  std::memcpy(&floats, &lanes, sizeof(floats));
  return floats;
}
inline U32x8 SplatUint(uint32_t value) { return U32x8{} + value; }
inline F32x8 Abs(F32x8 lanes) { return AsFloats(AsInts(lanes) & 0x7FFFFFFF); }
inline F32x8 RoundNearestEven(F32x8 lanes) {
  return (lanes + kRoundingMagic) - kRoundingMagic;
}
// min/max of non-NaN lanes (the codecs never let NaN reach them).
inline F32x8 Min(F32x8 a, F32x8 b) { return b < a ? b : a; }
inline F32x8 Max(F32x8 a, F32x8 b) { return b > a ? b : a; }

// The largest lane.
inline int32_t HorizontalMax(I32x8 lanes) {
  I32x8 other = __builtin_shufflevector(lanes, lanes, 4, 5, 6, 7, 0, 1, 2, 3);
  lanes = other > lanes ? other : lanes;
  other = __builtin_shufflevector(lanes, lanes, 2, 3, 0, 1, 6, 7, 4, 5);
  lanes = other > lanes ? other : lanes;
  other = __builtin_shufflevector(lanes, lanes, 1, 0, 3, 2, 5, 4, 7, 6);
  lanes = other > lanes ? other : lanes;
  return lanes[0];
}

// Bytes <-> lanes. GCC 12 turns __builtin_convertvector between 8-byte and 32-byte
// vectors into one scalar move per lane (a quarter of the codecs' time), so with AVX2 these
// use its widening moves and saturating packs; elsewhere, plain per-lane code.

// Eight bytes at `source`, sign-extended (int8 codes) or zero-extended (FP8 codes).
inline I32x8 LoadSignedBytes(const void* source) {
#if defined(__AVX2__)
  return (I32x8)_mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(source)));
#else
  int8_t bytes[kLanes];
  std::memcpy(bytes, source, kLanes);
  I32x8 lanes;
  for (int lane = 0; lane < kLanes; ++lane) lanes[lane] = bytes[lane];
  return lanes;
#endif
}
inline U32x8 LoadUnsignedBytes(const void* source) {
#if defined(__AVX2__)
  return (U32x8)_mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(source)));
#else
  uint8_t bytes[kLanes];
  std::memcpy(bytes, source, kLanes);
  U32x8 lanes;
  for (int lane = 0; lane < kLanes; ++lane) lanes[lane] = bytes[lane];
  return lanes;
#endif
}

// The low byte of each lane of a, b, c, d: 32 bytes in lane order.
inline void StoreLowBytes(void* destination, I32x8 a, I32x8 b, I32x8 c, I32x8 d) {
#if defined(__AVX2__)
  // Masked to 0..255, the unsigned saturating packs keep every value; they interleave the
  // 128-bit halves, which the final permutation undoes.
  const __m256i ab = _mm256_packus_epi32((__m256i)(a & 0xFF), (__m256i)(b & 0xFF));
  const __m256i cd = _mm256_packus_epi32((__m256i)(c & 0xFF), (__m256i)(d & 0xFF));
  const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(static_cast<__m256i*>(destination), bytes);
#else
  uint8_t bytes[4 * kLanes];
  for (int lane = 0; lane < kLanes; ++lane) {
    bytes[lane] = static_cast<uint8_t>(a[lane]);
    bytes[kLanes + lane] = static_cast<uint8_t>(b[lane]);
    bytes[2 * kLanes + lane] = static_cast<uint8_t>(c[lane]);
    bytes[3 * kLanes + lane] = static_cast<uint8_t>(d[lane]);
  }
  std::memcpy(destination, bytes, sizeof(bytes));
#endif
}

// The low byte of each lane: 8 bytes.
inline void StoreLowBytes(void* destination, I32x8 a) {
#if defined(__AVX2__)
  const __m256i masked = (__m256i)(a & 0xFF);
  const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(masked),
                                         _mm256_extracti128_si256(masked, 1));
  _mm_storel_epi64(static_cast<__m128i*>(destination), _mm_packus_epi16(words, words));
#else
  uint8_t bytes[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) bytes[lane] = static_cast<uint8_t>(a[lane]);
  std::memcpy(destination, bytes, sizeof(bytes));
#endif
}

// Nibbles: 32 codes (the low four bits of each lane of a, b, c, d) into 16 bytes, element
// 2k in the low nibble of byte k and element 2k + 1 in the high one.
inline void StoreNibbles(void* destination, I32x8 a, I32x8 b, I32x8 c, I32x8 d) {
#if defined(__AVX2__)
  const __m256i ab = _mm256_packus_epi32((__m256i)(a & 0xF), (__m256i)(b & 0xF));
  const __m256i cd = _mm256_packus_epi32((__m256i)(c & 0xF), (__m256i)(d & 0xF));
  const __m256i codes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  // Each 16-bit word holds (odd << 8) | even; fold it to (odd << 4) | even.
  const __m256i words = _mm256_or_si256(
      _mm256_and_si256(codes, _mm256_set1_epi16(0x000F)),
      _mm256_and_si256(_mm256_srli_epi16(codes, 4), _mm256_set1_epi16(0x00F0)));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0x08);
  _mm_storeu_si128(static_cast<__m128i*>(destination), _mm256_castsi256_si128(packed));
#else
  const I32x8 lanes[4] = {a, b, c, d};
  uint8_t bytes[2 * kLanes];
  for (int k = 0; k < 2 * kLanes; ++k) {
    const int32_t even = lanes[(2 * k) / kLanes][(2 * k) % kLanes];
    const int32_t odd = lanes[(2 * k + 1) / kLanes][(2 * k + 1) % kLanes];
    bytes[k] = static_cast<uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
  }
  std::memcpy(destination, bytes, sizeof(bytes));
#endif
}

// 16 bytes of nibbles into 32 sign-extended codes (the inverse of StoreNibbles).
inline void LoadNibbles(const void* source, I32x8 out[4]) {
#if defined(__AVX2__)
  const __m128i bytes = _mm_loadu_si128(static_cast<const __m128i*>(source));
  const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  const __m128i low = _mm_and_si128(bytes, mask);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  // (x ^ 8) - 8 sign-extends four bits within a byte.
  const __m128i first = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(low, high), eight), eight);
  const __m128i second = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(low, high), eight), eight);
  out[0] = (I32x8)_mm256_cvtepi8_epi32(first);
  out[1] = (I32x8)_mm256_cvtepi8_epi32(_mm_srli_si128(first, 8));
  out[2] = (I32x8)_mm256_cvtepi8_epi32(second);
  out[3] = (I32x8)_mm256_cvtepi8_epi32(_mm_srli_si128(second, 8));
#else
  uint8_t bytes[2 * kLanes];
  std::memcpy(bytes, source, sizeof(bytes));
  for (int element = 0; element < 4 * kLanes; ++element) {
    const int32_t nibble = (bytes[element / 2] >> (4 * (element % 2))) & 0xF;
    out[element / kLanes][element % kLanes] = (nibble ^ 8) - 8;
  }
#endif
}
#endif

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_LANES_H_
