// Chunks of kChunk elements through aligned stack buffers: the encoding may start at any
// byte of a packed message (codec.h), and the SIMD conversions of oneflow_core/dtype.h
// take typed pointers.
#include "kernels/compression/bf16_codec.h"

#include <algorithm>
#include <cstring>

#include "oneflow_core/dtype.h"

namespace oneflow {
namespace compression {
namespace {

constexpr int64_t kChunk = 1024;

}  // namespace

void EncodeBf16(const float* input, int64_t count, uint8_t* out) {
  alignas(32) BFloat16 chunk[kChunk];
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t n = std::min(kChunk, count - begin);
    ConvertToBFloat16(input + begin, n, chunk);
    std::memcpy(out + 2 * begin, chunk, 2 * n);
  }
}

void DecodeBf16(const uint8_t* in, int64_t count, DecodeMode mode, float* out) {
  alignas(32) BFloat16 chunk[kChunk];
  alignas(32) float widened[kChunk];
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t n = std::min(kChunk, count - begin);
    std::memcpy(chunk, in + 2 * begin, 2 * n);
    if (mode == DecodeMode::kStore) {
      ConvertToFloat(chunk, n, out + begin);
    } else {
      ConvertToFloat(chunk, n, widened);
      EmitValues(widened, n, DecodeMode::kAccumulate, out + begin);
    }
  }
}

}  // namespace compression
}  // namespace oneflow
