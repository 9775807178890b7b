#include "kernels/compression/group_scale.h"

#include <cstring>
#include <limits>

#include "kernels/compression/lanes.h"

namespace oneflow {
namespace compression {

// Magnitudes are compared as bit patterns: for non-negative floats the integer order of
// the patterns is the numeric order, and NaN patterns lie above +Inf's, so one integer
// max finds the largest magnitude and any non-finite value at once.
GroupRange MeasureGroup(const float* x, int64_t n) {
  int32_t largest = 0;
  int64_t i = 0;
#if defined(__GNUC__)
  if (n >= kLanes) {
    I32x8 lanes{};
    for (; i + kLanes <= n; i += kLanes) {
      const I32x8 magnitude = AsInts(LoadFloats(x + i)) & 0x7FFFFFFF;
      lanes = magnitude > lanes ? magnitude : lanes;
    }
    largest = HorizontalMax(lanes);
  }
#endif
  for (; i < n; ++i) {
    const int32_t magnitude = static_cast<int32_t>(FloatBits(x[i]) & 0x7FFFFFFF);
    if (magnitude > largest) largest = magnitude;
  }
  constexpr int32_t kLargestFiniteBits = 0x7F7FFFFF;  // FLT_MAX
  return GroupRange{BitsFloat(static_cast<uint32_t>(largest)), largest <= kLargestFiniteBits};
}

GroupScale ScaleFor(const GroupRange& range, float max_code) {
  if (!range.finite) return GroupScale{std::numeric_limits<float>::quiet_NaN(), 0.0f};
  if (range.abs_max < kSmallestScaledMagnitude) return GroupScale{0.0f, 0.0f};
  float scale = range.abs_max / max_code;
  // One ulp down (scale is a positive normal float here, so its pattern minus one is).
  if (scale * max_code > range.abs_max) scale = BitsFloat(FloatBits(scale) - 1);
  return GroupScale{scale, max_code / range.abs_max};
}

void EmitScaled(const float* values, int64_t n, float factor, DecodeMode mode, float* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  if (mode == DecodeMode::kStore) {
    for (; i + kLanes <= n; i += kLanes) StoreFloats(out + i, LoadFloats(values + i) * factor);
  } else {
    for (; i + kLanes <= n; i += kLanes) {
      StoreFloats(out + i, LoadFloats(out + i) + LoadFloats(values + i) * factor);
    }
  }
#endif
  for (; i < n; ++i) {
    if (mode == DecodeMode::kStore) {
      out[i] = values[i] * factor;
    } else {
      out[i] += values[i] * factor;
    }
  }
}

void EmitValues(const float* values, int64_t n, DecodeMode mode, float* out) {
  if (mode == DecodeMode::kStore) {
    std::memcpy(out, values, n * sizeof(float));
    return;
  }
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + kLanes <= n; i += kLanes) {
    StoreFloats(out + i, LoadFloats(out + i) + LoadFloats(values + i));
  }
#endif
  for (; i < n; ++i) out[i] += values[i];
}

}  // namespace compression
}  // namespace oneflow
