// The per-group scale shared by the scaled codecs (FP8 E4M3/E5M2, int8, int4): the
// group's largest magnitude maps to the format's largest code.
//
// Rules (docs/sbp_and_boxing.md, "Codecs and wire formats"):
//  - A group holding a NaN or an infinity gets scale NaN and all-zero codes, so every
//    element of the group decodes to NaN: a non-finite value stays non-finite through
//    compression (a loss scaler still sees the overflow), at the price of its neighbours.
//  - A group whose largest magnitude is below 2^-100 (zeros, and values too small to
//    matter next to any gradient) gets scale 0 and zero codes: it decodes to exact zeros,
//    with no 0/0 on the way, and the scale's inverse never overflows.
//  - Otherwise scale = max|x| / max_code, lowered by one ulp where max_code * scale would
//    round above max|x|, so that no decoded value exceeds max|x| in magnitude (a group
//    near FLT_MAX decodes to finite values, never to Inf). The encoder multiplies by
//    inverse = max_code / max|x|.
#ifndef KERNELS_COMPRESSION_GROUP_SCALE_H_
#define KERNELS_COMPRESSION_GROUP_SCALE_H_

#include <cstdint>

namespace oneflow {
namespace compression {

struct GroupRange {
  float abs_max = 0.0f;  // meaningful only when `finite`
  bool finite = true;    // no NaN, no +-Inf
};

// The largest magnitude of x[0, n) and whether every element is finite.
GroupRange MeasureGroup(const float* x, int64_t n);

struct GroupScale {
  float scale = 0.0f;    // decode: value = code * scale (NaN for a non-finite group)
  float inverse = 0.0f;  // encode: code = round(x * inverse); 0 when scale is 0 or NaN
};

// Groups below this largest magnitude encode as zeros (2^-100, about 7.9e-31).
constexpr float kSmallestScaledMagnitude = 7.888609052210118e-31f;

GroupScale ScaleFor(const GroupRange& range, float max_code);

// What a decoder does with a decoded value: write it, or add it to what is there
// (DecodeAccumulate: the fp32 accumulation of compressed reductions).
enum class DecodeMode { kStore, kAccumulate };

// out[i] = values[i] (kStore) or out[i] += values[i] (kAccumulate), i in [0, n).
void EmitValues(const float* values, int64_t n, DecodeMode mode, float* out);
// The same with values[i] * factor.
void EmitScaled(const float* values, int64_t n, float factor, DecodeMode mode, float* out);

}  // namespace compression
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_GROUP_SCALE_H_
