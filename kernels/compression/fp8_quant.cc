#include "kernels/compression/fp8_quant.h"

#include <cstring>

#include "kernels/compression/lanes.h"

namespace oneflow {
namespace compression {
namespace {

template <typename Traits>
void Quantize(const float* x, int64_t n, float inverse, uint8_t* codes) {
  int64_t i = 0;
#if defined(__GNUC__)
  auto code = [&](int64_t at) { return (I32x8)FloatToFp8Lanes<Traits>(LoadFloats(x + at) * inverse); };
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    StoreLowBytes(codes + i, code(i), code(i + kLanes), code(i + 2 * kLanes), code(i + 3 * kLanes));
  }
  for (; i + kLanes <= n; i += kLanes) StoreLowBytes(codes + i, code(i));
#endif
  for (; i < n; ++i) codes[i] = FloatToFp8<Traits>(x[i] * inverse);
}

template <typename Traits, DecodeMode kMode>
void Dequantize(const uint8_t* codes, int64_t n, float scale, float* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + kLanes <= n; i += kLanes) {
    F32x8 value = Fp8ToFloatLanes<Traits>(LoadUnsignedBytes(codes + i)) * scale;
    if (kMode == DecodeMode::kAccumulate) value = LoadFloats(out + i) + value;
    StoreFloats(out + i, value);
  }
#endif
  for (; i < n; ++i) {
    const float value = Fp8ToFloat<Traits>(codes[i]) * scale;
    if (kMode == DecodeMode::kAccumulate) {
      out[i] += value;
    } else {
      out[i] = value;
    }
  }
}

}  // namespace

void QuantizeFp8(Fp8Format format, const float* x, int64_t n, float inverse, uint8_t* codes) {
  if (format == Fp8Format::kE4M3) {
    Quantize<E4M3Traits>(x, n, inverse, codes);
  } else {
    Quantize<E5M2Traits>(x, n, inverse, codes);
  }
}

void DequantizeFp8(Fp8Format format, const uint8_t* codes, int64_t n, float scale,
                   DecodeMode mode, float* out) {
  const bool store = mode == DecodeMode::kStore;
  if (format == Fp8Format::kE4M3) {
    store ? Dequantize<E4M3Traits, DecodeMode::kStore>(codes, n, scale, out)
          : Dequantize<E4M3Traits, DecodeMode::kAccumulate>(codes, n, scale, out);
  } else {
    store ? Dequantize<E5M2Traits, DecodeMode::kStore>(codes, n, scale, out)
          : Dequantize<E5M2Traits, DecodeMode::kAccumulate>(codes, n, scale, out);
  }
}

}  // namespace compression
}  // namespace oneflow
