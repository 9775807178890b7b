#include "oneflow_core/dtype.h"

#include <string>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace {

struct DTypeInfo {
  DType dtype;
  absl::string_view name;
  proto::DataType proto;
  int64_t size;
  bool floating;
};

// One row per DType, in enum order, so a DType indexes its own row.
constexpr DTypeInfo kDTypeInfos[] = {
    {DType::kF32, "f32", proto::DTYPE_F32, 4, true},
    {DType::kF16, "f16", proto::DTYPE_F16, 2, true},
    {DType::kBF16, "bf16", proto::DTYPE_BF16, 2, true},
    {DType::kI32, "i32", proto::DTYPE_I32, 4, false},
    {DType::kI64, "i64", proto::DTYPE_I64, 8, false},
    {DType::kU8, "u8", proto::DTYPE_U8, 1, false},
    {DType::kF8E4M3, "f8e4m3", proto::DTYPE_F8_E4M3, 1, true},
    {DType::kF8E5M2, "f8e5m2", proto::DTYPE_F8_E5M2, 1, true},
};

constexpr bool RowsInEnumOrder() {
  for (int i = 0; i < static_cast<int>(sizeof(kDTypeInfos) / sizeof(kDTypeInfos[0])); ++i) {
    if (static_cast<int>(kDTypeInfos[i].dtype) != i) return false;
  }
  return true;
}
static_assert(RowsInEnumOrder(), "kDTypeInfos must list DTypes in enum order");

const DTypeInfo& Info(DType dtype) { return kDTypeInfos[static_cast<int>(dtype)]; }

std::string ValidNames() {
  return absl::StrJoin(kDTypeInfos, ", ", [](std::string* out, const DTypeInfo& info) {
    out->append(info.name.data(), info.name.size());
  });
}

}  // namespace

int64_t SizeOf(DType dtype) { return Info(dtype).size; }

bool IsFloating(DType dtype) { return Info(dtype).floating; }

absl::string_view DTypeName(DType dtype) { return Info(dtype).name; }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (const DTypeInfo& info : kDTypeInfos) {
    if (info.name == name) return info.dtype;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "'; valid: ", ValidNames()));
}

proto::DataType ToProto(DType dtype) { return Info(dtype).proto; }

absl::StatusOr<DType> FromProto(proto::DataType dtype) {
  for (const DTypeInfo& info : kDTypeInfos) {
    if (info.proto == dtype) return info.dtype;
  }
  if (dtype == proto::DTYPE_INVALID) {
    return absl::InvalidArgumentError(
        "proto DataType is DTYPE_INVALID (unset); expected a concrete dtype");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown proto DataType value ", static_cast<int>(dtype)));
}

namespace {

// Applies `convert` element-wise. The bulk of the buffer goes through blocks of a fixed
// size: at -O2, GCC's "very cheap" vectorizer cost model only takes loops that need no
// scalar epilogue and no runtime alias check, which a constant trip count and
// __restrict provide. The scalar conversions are branch-free (dtype.h), so the block
// loop becomes straight-line SIMD code; the tail is at most kBlock - 1 scalar steps.
template <typename In, typename Out, typename Convert>
void ConvertBuffer(const In* __restrict in, int64_t n, Out* __restrict out, Convert convert) {
  constexpr int64_t kBlock = 32;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const In* __restrict block_in = in + i;
    Out* __restrict block_out = out + i;
    for (int64_t j = 0; j < kBlock; ++j) block_out[j] = convert(block_in[j]);
  }
  for (; i < n; ++i) out[i] = convert(in[i]);
}

}  // namespace

// Where the target has F16C (x86-64-v3 does), f16 uses the hardware conversions: they
// round to nearest even like ToFloat16 and keep NaN payloads the same way, so the
// results are bit-identical to the scalar functions (checked over all 2^32 floats), at
// several times the speed. An explicit rounding immediate ignores MXCSR's mode.
void ConvertToFloat16(const float* in, int64_t n, Float16* out) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  for (; i < n; ++i) out[i] = ToFloat16(in[i]);
#else
  ConvertBuffer(in, n, out, [](float v) { return ToFloat16(v); });
#endif
}

namespace {

void ConvertToBFloat16Portable(const float* in, int64_t n, BFloat16* out) {
  ConvertBuffer(in, n, out, [](float v) { return ToBFloat16(v); });
}

#if defined(__x86_64__)
// AVX512_BF16's VCVTNE2PS2BF16 rounds 32 floats to nearest even in one instruction: what
// the bf16 matmul kernels pay on both operands of every call (kernels/cpu/matmul.cc). Its
// results are ToBFloat16's bit for bit (NaN: the top half with the quiet bit 0x0040 set;
// infinities and overflow to infinity from the same integer rounding) except for
// subnormal inputs, which the instruction flushes to a signed zero whatever MXCSR says:
// a block holding one goes through the scalar rounding instead.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void ConvertToBFloat16Avx512Bf16(const float* in,
                                                                                         int64_t n,
                                                                                         BFloat16* out) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i largest_subnormal_less_one = _mm512_set1_epi32(0x007FFFFF - 1);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 low = _mm512_loadu_ps(in + i);
    const __m512 high = _mm512_loadu_ps(in + i + 16);
    // |x| - 1 <= 0x7FFFFE (unsigned) exactly when |x| is a subnormal pattern (1 ... 0x7FFFFF).
    const __m512i low_less_one = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(low), magnitude), one);
    const __m512i high_less_one = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(high), magnitude), one);
    if ((_mm512_cmple_epu32_mask(low_less_one, largest_subnormal_less_one) |
         _mm512_cmple_epu32_mask(high_less_one, largest_subnormal_less_one)) != 0) {
      for (int64_t j = 0; j < 32; ++j) out[i + j] = ToBFloat16(in[i + j]);
      continue;
    }
    // The second operand fills the low 16 lanes.
    _mm512_storeu_si512(out + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
  }
  for (; i < n; ++i) out[i] = ToBFloat16(in[i]);
}
#endif

}  // namespace

void ConvertToBFloat16(const float* in, int64_t n, BFloat16* out) {
#if defined(__x86_64__)
  static const bool avx512_bf16 = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  if (avx512_bf16) {
    ConvertToBFloat16Avx512Bf16(in, n, out);
    return;
  }
#endif
  ConvertToBFloat16Portable(in, n, out);
}

void ConvertToFloat8E4M3(const float* in, int64_t n, Float8E4M3* out) {
  ConvertBuffer(in, n, out, [](float v) { return ToFloat8E4M3(v); });
}

void ConvertToFloat8E5M2(const float* in, int64_t n, Float8E5M2* out) {
  ConvertBuffer(in, n, out, [](float v) { return ToFloat8E5M2(v); });
}

void ConvertToFloat(const Float16* in, int64_t n, float* out) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(half));
  }
  for (; i < n; ++i) out[i] = ToFloat(in[i]);
#else
  ConvertBuffer(in, n, out, [](Float16 v) { return ToFloat(v); });
#endif
}

void ConvertToFloat(const BFloat16* in, int64_t n, float* out) {
  ConvertBuffer(in, n, out, [](BFloat16 v) { return ToFloat(v); });
}

// Both 8-bit formats widen through f16 with F16C, exactly:
//  - e5m2 is the top byte of an f16 (same exponent and bias), so its f16 is bits << 8.
//  - e4m3 bits << 7 (sign moved to bit 15) read as f16 is the e4m3 value times 2^-8,
//    subnormals included, since only the bias differs (15 vs 7); multiplying the float
//    by 2^8 is exact. Its NaN, S.1111.111, is substituted with the f16 quiet NaN.
// F16C quiets signaling NaNs and keeps sign and payload, as the scalar ToFloat does.
void ConvertToFloat(const Float8E4M3* in, int64_t n, float* out) {
#if defined(__F16C__)
  int64_t i = 0;
  const __m128i abs_mask = _mm_set1_epi16(0x7F);
  const __m128i nan_abs = _mm_set1_epi16(0x7F);
  const __m128i quiet_nan = _mm_set1_epi16(0x7E00);
  const __m256 scale = _mm256_set1_ps(256.0f);
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes =
        _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i)));
    const __m128i abs = _mm_and_si128(bytes, abs_mask);
    const __m128i sign = _mm_slli_epi16(_mm_andnot_si128(abs_mask, bytes), 8);
    const __m128i magnitude =
        _mm_blendv_epi8(_mm_slli_epi16(abs, 7), quiet_nan, _mm_cmpeq_epi16(abs, nan_abs));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm_or_si128(magnitude, sign)), scale));
  }
  for (; i < n; ++i) out[i] = ToFloat(in[i]);
#else
  ConvertBuffer(in, n, out, [](Float8E4M3 v) { return ToFloat(v); });
#endif
}

void ConvertToFloat(const Float8E5M2* in, int64_t n, float* out) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes =
        _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_slli_epi16(bytes, 8)));
  }
  for (; i < n; ++i) out[i] = ToFloat(in[i]);
#else
  ConvertBuffer(in, n, out, [](Float8E5M2 v) { return ToFloat(v); });
#endif
}

}  // namespace oneflow
