#include "kernels/compression/fp8.h"

namespace oneflow {
namespace {

using compression::E4M3Traits;
using compression::E5M2Traits;

template <typename Traits>
void ConvertToFp8(const float* in, int64_t count, uint8_t* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  using compression::kLanes;
  auto code = [&](int64_t at) {
    return (I32x8)compression::FloatToFp8Lanes<Traits>(compression::LoadFloats(in + at));
  };
  for (; i + 4 * kLanes <= count; i += 4 * kLanes) {
    compression::StoreLowBytes(out + i, code(i), code(i + kLanes), code(i + 2 * kLanes),
                               code(i + 3 * kLanes));
  }
  for (; i + kLanes <= count; i += kLanes) compression::StoreLowBytes(out + i, code(i));
#endif
  for (; i < count; ++i) out[i] = compression::FloatToFp8<Traits>(in[i]);
}

template <typename Traits>
void ConvertFromFp8(const uint8_t* in, int64_t count, float* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + compression::kLanes <= count; i += compression::kLanes) {
    compression::StoreFloats(
        out + i, compression::Fp8ToFloatLanes<Traits>(compression::LoadUnsignedBytes(in + i)));
  }
#endif
  for (; i < count; ++i) out[i] = compression::Fp8ToFloat<Traits>(in[i]);
}

}  // namespace

uint8_t FloatToE4M3(float value) { return compression::FloatToFp8<E4M3Traits>(value); }
uint8_t FloatToE5M2(float value) { return compression::FloatToFp8<E5M2Traits>(value); }
float E4M3ToFloat(uint8_t code) { return compression::Fp8ToFloat<E4M3Traits>(code); }
float E5M2ToFloat(uint8_t code) { return compression::Fp8ToFloat<E5M2Traits>(code); }

void FloatsToFp8(Fp8Format format, const float* in, int64_t count, uint8_t* out) {
  if (format == Fp8Format::kE4M3) {
    ConvertToFp8<E4M3Traits>(in, count, out);
  } else {
    ConvertToFp8<E5M2Traits>(in, count, out);
  }
}

void Fp8ToFloats(Fp8Format format, const uint8_t* in, int64_t count, float* out) {
  if (format == Fp8Format::kE4M3) {
    ConvertFromFp8<E4M3Traits>(in, count, out);
  } else {
    ConvertFromFp8<E5M2Traits>(in, count, out);
  }
}

}  // namespace oneflow
