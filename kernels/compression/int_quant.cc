#include "kernels/compression/int_quant.h"

#include <cstring>

#include "kernels/compression/lanes.h"

namespace oneflow {
namespace compression {
namespace {

// Codes in [lowest_code, max_code]: symmetric (lowest_code = -max_code) but for int4 to
// nearest, which may use -8 (ChooseInt4Scale).
inline float RoundedCode(float x, float inverse, float lowest_code, float max_code) {
  float rounded = RoundNearestEven(x * inverse);
  rounded = rounded < lowest_code ? lowest_code : rounded;
  rounded = rounded > max_code ? max_code : rounded;
  return rounded;
}

inline int32_t QuantizeNearest(float x, float inverse, float max_code, float lowest_code) {
  return static_cast<int32_t>(RoundedCode(x, inverse, lowest_code, max_code));
}

inline int32_t QuantizeNearest(float x, float inverse, float max_code) {
  return QuantizeNearest(x, inverse, max_code, -max_code);
}

#if defined(__GNUC__)
inline F32x8 RoundedCode(F32x8 x, float inverse, float lowest_code, float max_code) {
  F32x8 rounded = RoundNearestEven(x * inverse);
  rounded = Max(rounded, SplatFloat(lowest_code));
  return Min(rounded, SplatFloat(max_code));
}

inline I32x8 QuantizeNearest(F32x8 x, float inverse, float max_code, float lowest_code) {
  return __builtin_convertvector(RoundedCode(x, inverse, lowest_code, max_code), I32x8);
}

inline I32x8 QuantizeNearest(F32x8 x, float inverse, float max_code) {
  return QuantizeNearest(x, inverse, max_code, -max_code);
}
#endif

// floor(x * inverse + u), clamped: round to nearest even, then step down where that
// went up. |x * inverse + u| <= max_code + 1 <= 128, far inside RoundNearestEven's range.
inline int32_t QuantizeStochastic(float x, float inverse, float u, float max_code) {
  const float shifted = x * inverse + u;
  float floor = RoundNearestEven(shifted);
  if (floor > shifted) floor -= 1.0f;
  floor = floor < -max_code ? -max_code : floor;
  floor = floor > max_code ? max_code : floor;
  return static_cast<int32_t>(floor);
}

#if defined(__GNUC__)
inline I32x8 QuantizeStochastic(F32x8 x, float inverse, F32x8 u, float max_code) {
  const F32x8 shifted = x * inverse + u;
  F32x8 floor = RoundNearestEven(shifted);
  floor = floor > shifted ? floor - 1.0f : floor;
  floor = Max(floor, SplatFloat(-max_code));
  floor = Min(floor, SplatFloat(max_code));
  return __builtin_convertvector(floor, I32x8);
}
#endif

template <DecodeMode kMode>
inline void Put(float* out, float value) {
  if (kMode == DecodeMode::kStore) {
    *out = value;
  } else {
    *out += value;
  }
}

#if defined(__GNUC__)
template <DecodeMode kMode>
inline void PutLanes(float* out, F32x8 value) {
  if (kMode == DecodeMode::kStore) {
    StoreFloats(out, value);
  } else {
    StoreFloats(out, LoadFloats(out) + value);
  }
}
#endif

template <DecodeMode kMode>
void DequantizeInt8Impl(const int8_t* codes, int64_t n, float scale, float* out) {
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + kLanes <= n; i += kLanes) {
    const I32x8 wide = LoadSignedBytes(codes + i);
    PutLanes<kMode>(out + i, __builtin_convertvector(wide, F32x8) * scale);
  }
#endif
  for (; i < n; ++i) Put<kMode>(out + i, static_cast<float>(codes[i]) * scale);
}

inline void PutNibble(uint8_t* payload, int64_t position, int32_t code) {
  const uint8_t nibble = static_cast<uint8_t>(code & 0xF);
  if (position % 2 == 0) {
    payload[position / 2] = nibble;
  } else {
    payload[position / 2] |= static_cast<uint8_t>(nibble << 4);
  }
}

inline int32_t GetNibble(const uint8_t* payload, int64_t position) {
  const int32_t nibble = (payload[position / 2] >> (4 * (position % 2))) & 0xF;
  return (nibble ^ 8) - 8;  // sign-extend four bits
}

template <DecodeMode kMode>
void DequantizeInt4Impl(const uint8_t* payload, int64_t position, int64_t n, float scale,
                        float* out) {
  int64_t i = 0;
  if (position % 2 != 0 && n > 0) {
    Put<kMode>(out, static_cast<float>(GetNibble(payload, position)) * scale);
    i = 1;
  }
#if defined(__GNUC__)
  // Two elements per byte: 16 bytes -> 32 elements. (position + i) is even here.
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    I32x8 codes[4];
    LoadNibbles(payload + (position + i) / 2, codes);
    for (int part = 0; part < 4; ++part) {
      PutLanes<kMode>(out + i + part * kLanes,
                      __builtin_convertvector(codes[part], F32x8) * scale);
    }
  }
#endif
  for (; i < n; ++i) {
    Put<kMode>(out + i, static_cast<float>(GetNibble(payload, position + i)) * scale);
  }
}

}  // namespace

void QuantizeInt8(const float* x, int64_t n, float inverse, int8_t* codes, const RoundingNoise* noise,
                  uint64_t noise_index) {
  if (noise != nullptr) {
    int64_t i = 0;
#if defined(__GNUC__) && defined(__AVX2__)
    for (; i + kLanes <= n; i += kLanes) {
      StoreLowBytes(codes + i, QuantizeStochastic(LoadFloats(x + i), inverse, noise->Uniform8(noise_index + i),
                                                  kInt8MaxCode));
    }
#endif
    for (; i < n; ++i) {
      codes[i] = static_cast<int8_t>(QuantizeStochastic(x[i], inverse, noise->Uniform(noise_index + i), kInt8MaxCode));
    }
    return;
  }
  int64_t i = 0;
#if defined(__GNUC__)
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    StoreLowBytes(codes + i, QuantizeNearest(LoadFloats(x + i), inverse, kInt8MaxCode),
                  QuantizeNearest(LoadFloats(x + i + kLanes), inverse, kInt8MaxCode),
                  QuantizeNearest(LoadFloats(x + i + 2 * kLanes), inverse, kInt8MaxCode),
                  QuantizeNearest(LoadFloats(x + i + 3 * kLanes), inverse, kInt8MaxCode));
  }
  for (; i + kLanes <= n; i += kLanes) {
    StoreLowBytes(codes + i, QuantizeNearest(LoadFloats(x + i), inverse, kInt8MaxCode));
  }
#endif
  for (; i < n; ++i) codes[i] = static_cast<int8_t>(QuantizeNearest(x[i], inverse, kInt8MaxCode));
}

void DequantizeInt8(const int8_t* codes, int64_t n, float scale, DecodeMode mode, float* out) {
  if (mode == DecodeMode::kStore) {
    DequantizeInt8Impl<DecodeMode::kStore>(codes, n, scale, out);
  } else {
    DequantizeInt8Impl<DecodeMode::kAccumulate>(codes, n, scale, out);
  }
}

namespace {

constexpr int kInt4Candidates = sizeof(kInt4Divisors) / sizeof(kInt4Divisors[0]);

inline float LowestCodeFor(float divisor) { return divisor >= 8.0f ? -8.0f : -kInt4MaxCode; }

// For each candidate divisor d: sum over i of (code_d(x[i]) - x[i] * d * unit)^2, codes
// RoundedCode(x[i], d * unit, LowestCodeFor(d), 7). That is candidate d's squared error over
// its step squared (unit = 1 / the group's largest magnitude in x's units, so step_d =
// 1 / (d * unit)). One pass over the group for all candidates, each with its own
// accumulator lanes: per candidate and group a division and a horizontal sum made the
// search 9x slower than the plain encoder at G = 32.
void Int4CodeErrors(const float* x, int64_t n, float unit, float errors[kInt4Candidates]) {
  float inverses[kInt4Candidates], lowest[kInt4Candidates];
  for (int c = 0; c < kInt4Candidates; ++c) {
    inverses[c] = kInt4Divisors[c] * unit;
    lowest[c] = LowestCodeFor(kInt4Divisors[c]);
    errors[c] = 0.0f;
  }
  int64_t i = 0;
#if defined(__GNUC__)
  if (n >= kLanes) {
    F32x8 lanes[kInt4Candidates];
    for (int c = 0; c < kInt4Candidates; ++c) lanes[c] = SplatFloat(0.0f);
    for (; i + kLanes <= n; i += kLanes) {
      const F32x8 value = LoadFloats(x + i);
      for (int c = 0; c < kInt4Candidates; ++c) {
        const F32x8 target = value * inverses[c];
        const F32x8 miss = Min(Max(RoundNearestEven(target), SplatFloat(lowest[c])), SplatFloat(kInt4MaxCode)) - target;
        lanes[c] += miss * miss;
      }
    }
    for (int c = 0; c < kInt4Candidates; ++c) {
      for (int lane = 0; lane < kLanes; ++lane) errors[c] += lanes[c][lane];
    }
  }
#endif
  for (; i < n; ++i) {
    for (int c = 0; c < kInt4Candidates; ++c) {
      const float target = x[i] * inverses[c];
      const float miss = RoundedCode(x[i], inverses[c], lowest[c], kInt4MaxCode) - target;
      errors[c] += miss * miss;
    }
  }
}

}  // namespace

Int4Scale ChooseInt4Scale(const float* x, int64_t n, float factor, const GroupRange& range) {
  GroupRange scaled = range;
  scaled.abs_max *= factor;
  Int4Scale chosen{ScaleFor(scaled, kInt4MaxCode), -kInt4MaxCode};
  chosen.scale.inverse *= factor;
  if (!(chosen.scale.scale > 0.0f)) return chosen;  // NaN (non-finite) or 0 (all but zero)
  // In x's units: the largest magnitude is range.abs_max, candidate d's step is
  // range.abs_max / d, and its squared error errors[c] * step^2.
  float errors[kInt4Candidates];
  Int4CodeErrors(x, n, 1.0f / range.abs_max, errors);
  int best = 0;
  float best_error = errors[0] / (kInt4Divisors[0] * kInt4Divisors[0]);
  for (int c = 1; c < kInt4Candidates; ++c) {
    const float error = errors[c] / (kInt4Divisors[c] * kInt4Divisors[c]);
    if (error < best_error) {
      best_error = error;
      best = c;
    }
  }
  if (kInt4Divisors[best] == kInt4MaxCode) return chosen;
  chosen = Int4Scale{ScaleFor(scaled, kInt4Divisors[best]), LowestCodeFor(kInt4Divisors[best])};
  chosen.scale.inverse *= factor;
  return chosen;
}

void QuantizeInt4(const float* x, int64_t n, float inverse, uint8_t* payload, int64_t position,
                  const RoundingNoise* noise, uint64_t noise_index, float lowest_code) {
  if (noise != nullptr) {
    int64_t i = 0;
#if defined(__GNUC__) && defined(__AVX2__)
    if (position % 2 != 0 && n > 0) {
      PutNibble(payload, position, QuantizeStochastic(x[0], inverse, noise->Uniform(noise_index), kInt4MaxCode));
      i = 1;
    }
    for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
      I32x8 codes[4];
      for (int part = 0; part < 4; ++part) {
        const int64_t at = i + part * kLanes;
        codes[part] = QuantizeStochastic(LoadFloats(x + at), inverse,
                                         noise->Uniform8(noise_index + at), kInt4MaxCode);
      }
      StoreNibbles(payload + (position + i) / 2, codes[0], codes[1], codes[2], codes[3]);
    }
#endif
    for (; i < n; ++i) {
      PutNibble(payload, position + i,
                QuantizeStochastic(x[i], inverse, noise->Uniform(noise_index + i), kInt4MaxCode));
    }
    return;
  }
  int64_t i = 0;
  if (position % 2 != 0 && n > 0) {
    PutNibble(payload, position, QuantizeNearest(x[0], inverse, kInt4MaxCode, lowest_code));
    i = 1;
  }
#if defined(__GNUC__)
  // 32 elements -> 16 bytes. (position + i) is even here.
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    StoreNibbles(payload + (position + i) / 2,
                 QuantizeNearest(LoadFloats(x + i), inverse, kInt4MaxCode, lowest_code),
                 QuantizeNearest(LoadFloats(x + i + kLanes), inverse, kInt4MaxCode, lowest_code),
                 QuantizeNearest(LoadFloats(x + i + 2 * kLanes), inverse, kInt4MaxCode, lowest_code),
                 QuantizeNearest(LoadFloats(x + i + 3 * kLanes), inverse, kInt4MaxCode, lowest_code));
  }
#endif
  for (; i < n; ++i) {
    PutNibble(payload, position + i, QuantizeNearest(x[i], inverse, kInt4MaxCode, lowest_code));
  }
}

void ZeroInt4(uint8_t* payload, int64_t position, int64_t n) {
  for (int64_t i = 0; i < n; ++i) PutNibble(payload, position + i, 0);
}

void DequantizeInt4(const uint8_t* payload, int64_t position, int64_t n, float scale,
                    DecodeMode mode, float* out) {
  if (mode == DecodeMode::kStore) {
    DequantizeInt4Impl<DecodeMode::kStore>(payload, position, n, scale, out);
  } else {
    DequantizeInt4Impl<DecodeMode::kAccumulate>(payload, position, n, scale, out);
  }
}

}  // namespace compression
}  // namespace oneflow
