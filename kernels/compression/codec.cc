// The codecs' common frame: groups, the header of per-group scales, the payload, the
// optional rotation, and the order of work. The per-format arithmetic is in fp8_quant,
// int_quant and bf16_codec; the layout and the special-value rules are in codec.h.
//
// Rotated groups of the full size G are transformed unnormalised (t = WHT(x)) and the
// 1 / sqrt(G) is folded into the scale: the codes are those of y = t / sqrt(G) scaled to
// the format, and the header stores y's scale, so decode = WHT(code) * scale / sqrt(G) =
// H(code * scale). A short last group takes the normalised piecewise rotation instead.
#include "kernels/compression/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/compression/bf16_codec.h"
#include "kernels/compression/fp8_quant.h"
#include "kernels/compression/group_scale.h"
#include "kernels/compression/hadamard.h"
#include "kernels/compression/int_quant.h"
#include "kernels/compression/lanes.h"
#include "kernels/compression/rounding_noise.h"

namespace oneflow {
namespace {

using compression::DecodeMode;

constexpr int64_t kMinHadamardGroup = 32;
constexpr int64_t kMaxHadamardGroup = 2048;
// Groups encoded as one batch (see Encode).
constexpr int64_t kBatchGroups = 8;

constexpr Codec kAllCodecs[] = {Codec::kNone, Codec::kFp8E4M3, Codec::kFp8E5M2, Codec::kInt8,
                                Codec::kInt4, Codec::kBf16};

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// f32 values per group in the header.
int64_t ParametersPerGroup(Codec codec) {
  switch (codec) {
    case Codec::kNone:
    case Codec::kBf16:
      return 0;
    default:
      return 1;
  }
}

int64_t PayloadBytes(Codec codec, int64_t count) {
  switch (codec) {
    case Codec::kNone:
      return count * 4;
    case Codec::kInt4:
      return (count + 1) / 2;
    case Codec::kBf16:
      return count * 2;
    default:
      return count;
  }
}

int64_t GroupCount(const CodecOptions& options, int64_t count) {
  return (count + options.group_size - 1) / options.group_size;
}

bool Rotates(const CodecOptions& options) {
  return options.hadamard && options.codec != Codec::kNone && options.codec != Codec::kBf16;
}

float MaxCode(Codec codec) {
  switch (codec) {
    case Codec::kFp8E4M3:
      return kE4M3Max;
    case Codec::kFp8E5M2:
      return kE5M2Max;
    case Codec::kInt8:
      return compression::kInt8MaxCode;
    default:
      return compression::kInt4MaxCode;
  }
}

Fp8Format FormatOf(Codec codec) {
  return codec == Codec::kFp8E5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
}

// One group of a scaled codec (fp8, int8, int4) whose values are x[i] * factor: `x`
// already rotated if the options say so (factor 1), or H x unnormalised (factor
// 1 / sqrt(n), folded into the scale rather than spent on a pass over the group).
struct PreparedGroup {
  const float* x = nullptr;
  int64_t n = 0;
  float factor = 1.0f;
  compression::GroupRange range;
};

compression::GroupScale ScaleOf(const CodecOptions& options, const PreparedGroup& group) {
  compression::GroupRange range = group.range;
  range.abs_max *= group.factor;
  compression::GroupScale scale = compression::ScaleFor(range, MaxCode(options.codec));
  scale.inverse *= group.factor;
  return scale;
}

// `lowest_int4_code`: int4 to nearest only, ChooseInt4Scale's lowest code.
void QuantizeGroup(const CodecOptions& options, const PreparedGroup& group,
                   const compression::GroupScale& scale, uint8_t* payload, int64_t position,
                   const compression::RoundingNoise* noise, uint64_t noise_index,
                   float lowest_int4_code) {
  const int64_t n = group.n;
  switch (options.codec) {
    case Codec::kFp8E4M3:
    case Codec::kFp8E5M2:
      if (!group.range.finite) {
        std::memset(payload + position, 0, n);
      } else {
        compression::QuantizeFp8(FormatOf(options.codec), group.x, n, scale.inverse,
                                 payload + position);
      }
      break;
    case Codec::kInt8:
      if (!group.range.finite) {
        std::memset(payload + position, 0, n);
      } else {
        compression::QuantizeInt8(group.x, n, scale.inverse,
                                  reinterpret_cast<int8_t*>(payload + position), noise, noise_index);
      }
      break;
    case Codec::kInt4:
      if (!group.range.finite) {
        compression::ZeroInt4(payload, position, n);
      } else {
        compression::QuantizeInt4(group.x, n, scale.inverse, payload, position, noise,
                                  noise_index, lowest_int4_code);
      }
      break;
    default:
      break;
  }
}

void DecodeScaledGroup(const CodecOptions& options, const uint8_t* payload, int64_t position,
                       int64_t n, float scale, DecodeMode mode, float* out) {
  switch (options.codec) {
    case Codec::kFp8E4M3:
    case Codec::kFp8E5M2:
      compression::DequantizeFp8(FormatOf(options.codec), payload + position, n, scale, mode, out);
      break;
    case Codec::kInt8:
      compression::DequantizeInt8(reinterpret_cast<const int8_t*>(payload + position), n, scale,
                                  mode, out);
      break;
    case Codec::kInt4:
      compression::DequantizeInt4(payload, position, n, scale, mode, out);
      break;
    default:
      break;
  }
}

void DecodeImpl(const CodecOptions& options, const void* in, int64_t count, DecodeMode mode,
                float* out) {
  if (count == 0) return;
  const uint8_t* bytes = static_cast<const uint8_t*>(in);
  if (options.codec == Codec::kNone) {
    if (mode == DecodeMode::kStore) {
      std::memcpy(out, bytes, count * sizeof(float));
      return;
    }
    // The floats may sit at any byte of a packed buffer: read them with memcpy.
    for (int64_t i = 0; i < count; ++i) {
      float value;
      std::memcpy(&value, bytes + 4 * i, sizeof(value));
      out[i] += value;
    }
    return;
  }
  if (options.codec == Codec::kBf16) {
    compression::DecodeBf16(bytes, count, mode, out);
    return;
  }
  const int64_t group_size = options.group_size;
  const int64_t groups = GroupCount(options, count);
  const int64_t parameters = ParametersPerGroup(options.codec);
  const uint8_t* header = bytes;
  const uint8_t* payload = bytes + groups * parameters * 4;
  const bool rotates = Rotates(options);
  const float norm = rotates ? HadamardNorm(group_size) : 1.0f;
  // Rotated groups are at most 2048 elements (CheckCodecOptions).
  alignas(32) float scratch[kMaxHadamardGroup];
  for (int64_t group = 0; group < groups; ++group) {
    const int64_t begin = group * group_size;
    const int64_t n = std::min(group_size, count - begin);
    float scale;
    std::memcpy(&scale, header + group * parameters * 4, 4);
    if (rotates && n == group_size) {
      // H(code * scale) / sqrt(G) = H(code) * (scale / sqrt(G)): one pass fewer.
      DecodeScaledGroup(options, payload, begin, n, 1.0f, DecodeMode::kStore, scratch);
      FastWalshHadamard(scratch, n);
      compression::EmitScaled(scratch, n, scale * norm, mode, out + begin);
    } else if (rotates) {  // a short last group: rotated piecewise
      DecodeScaledGroup(options, payload, begin, n, scale, DecodeMode::kStore, scratch);
      HadamardRotate(scratch, n);
      compression::EmitValues(scratch, n, mode, out + begin);
    } else {
      DecodeScaledGroup(options, payload, begin, n, scale, mode, out + begin);
    }
  }
}

// Adds sum((decoded - quantized * factor)^2) and sum(original^2) over n elements to *sums,
// in float lanes (one chunk of at most a group: the sums' rounding stays that of a few
// thousand terms), then in double.
void AddChunkError(const float* decoded, const float* quantized, float factor, const float* original,
                   int64_t n, EncodingErrorSums* sums) {
  float error = 0.0f, signal = 0.0f;
  int64_t i = 0;
#if defined(__GNUC__)
  F32x8 error_lanes = compression::SplatFloat(0.0f), signal_lanes = compression::SplatFloat(0.0f);
  const F32x8 factor_lanes = compression::SplatFloat(factor);
  for (; i + compression::kLanes <= n; i += compression::kLanes) {
    const F32x8 difference =
        compression::LoadFloats(decoded + i) - compression::LoadFloats(quantized + i) * factor_lanes;
    const F32x8 value = compression::LoadFloats(original + i);
    error_lanes += difference * difference;
    signal_lanes += value * value;
  }
  for (int lane = 0; lane < compression::kLanes; ++lane) {
    error += error_lanes[lane];
    signal += signal_lanes[lane];
  }
#endif
  for (; i < n; ++i) {
    const float difference = decoded[i] - quantized[i] * factor;
    error += difference * difference;
    signal += original[i] * original[i];
  }
  sums->error_sq += error;
  sums->signal_sq += signal;
}

constexpr int64_t kReadBackChunk = kMaxHadamardGroup;

// Adds group `group`'s error and signal to *sums: its codes at `position` of the payload
// read back with the scale the header holds (what the decoder multiplies by) against the
// values that were quantized (group.x * group.factor: rotated ones in the rotated domain,
// codec.h's EncodeMeasured says why that is the error), and `original`'s squares.
void AddGroupError(const CodecOptions& options, const PreparedGroup& group, const uint8_t* payload,
                   int64_t position, float scale, const float* original, EncodingErrorSums* sums) {
  alignas(32) float decoded[kReadBackChunk];
  for (int64_t offset = 0; offset < group.n; offset += kReadBackChunk) {
    const int64_t n = std::min(kReadBackChunk, group.n - offset);
    DecodeScaledGroup(options, payload, position + offset, n, scale, DecodeMode::kStore, decoded);
    AddChunkError(decoded, group.x + offset, group.factor, original + offset, n, sums);
  }
}

// bf16 has no groups: encoded, then read back and compared a chunk at a time.
void EncodeBf16Measured(const float* input, int64_t count, uint8_t* out, EncodingErrorSums* sums) {
  alignas(32) float decoded[kReadBackChunk];
  for (int64_t begin = 0; begin < count; begin += kReadBackChunk) {
    const int64_t n = std::min(kReadBackChunk, count - begin);
    compression::EncodeBf16(input + begin, n, out + 2 * begin);
    compression::DecodeBf16(out + 2 * begin, n, DecodeMode::kStore, decoded);
    AddChunkError(decoded, input + begin, 1.0f, input + begin, n, sums);
  }
}

void EncodeImpl(const CodecOptions& options, const float* input, int64_t count, void* out,
                int64_t first_index, EncodingErrorSums* sums) {
  if (count == 0) return;
  uint8_t* bytes = static_cast<uint8_t*>(out);
  if (options.codec == Codec::kNone) {
    std::memcpy(bytes, input, count * sizeof(float));
    if (sums != nullptr) {
      for (int64_t i = 0; i < count; ++i) sums->signal_sq += static_cast<double>(input[i]) * input[i];
    }
    return;
  }
  if (options.codec == Codec::kBf16) {
    if (sums != nullptr) {
      EncodeBf16Measured(input, count, bytes, sums);
    } else {
      compression::EncodeBf16(input, count, bytes);
    }
    return;
  }
  const int64_t group_size = options.group_size;
  const int64_t groups = GroupCount(options, count);
  const int64_t parameters = ParametersPerGroup(options.codec);
  uint8_t* header = bytes;
  uint8_t* payload = bytes + groups * parameters * 4;
  const bool rotates = Rotates(options);
  const bool stochastic = options.stochastic_rounding && RoundsStochastically(options.codec);
  const float norm = rotates ? HadamardNorm(group_size) : 1.0f;
  const compression::RoundingNoise noise(options.seed);
  alignas(32) float scratch[kMaxHadamardGroup];
  // Groups go in batches: measure every group of the batch, then compute their scales,
  // then quantize them. One group at a time, each group's quantization waited on its own
  // chain of horizontal max and divisions (a third of int8's encoding time at G = 128);
  // batched, those chains overlap. Rotated groups are transformed into `scratch`, which
  // holds a batch.
  const int64_t batch = std::max<int64_t>(1, std::min<int64_t>(kBatchGroups,
                                                                 kMaxHadamardGroup / group_size));
  PreparedGroup prepared[kBatchGroups];
  compression::GroupScale scales[kBatchGroups];
  float lowest_int4_codes[kBatchGroups];
  // With fitted_int4_scale, int4 rounded to nearest chooses its scale by the error it makes
  // (int_quant.h, ChooseInt4Scale); stochastic rounding keeps max|x| / 7 and symmetric
  // codes, unbiased.
  const bool searches_int4_scale = options.codec == Codec::kInt4 && options.fitted_int4_scale && !stochastic;
  for (int64_t first = 0; first < groups; first += batch) {
    const int64_t last = std::min(groups, first + batch);
    for (int64_t group = first; group < last; ++group) {
      PreparedGroup& p = prepared[group - first];
      const int64_t begin = group * group_size;
      p.n = std::min(group_size, count - begin);
      p.x = input + begin;
      p.factor = 1.0f;
      if (rotates) {
        float* rotated = scratch + (group - first) * group_size;
        if (p.n == group_size) {
          FastWalshHadamard(p.x, rotated, p.n);  // unnormalised: the factor carries 1 / sqrt(G)
          p.factor = norm;
        } else {  // a short last group: rotated piecewise
          std::memcpy(rotated, p.x, p.n * sizeof(float));
          HadamardRotate(rotated, p.n);
        }
        p.x = rotated;
      }
      p.range = compression::MeasureGroup(p.x, p.n);
    }
    for (int64_t group = first; group < last; ++group) {
      const PreparedGroup& p = prepared[group - first];
      if (searches_int4_scale) {
        const compression::Int4Scale chosen = compression::ChooseInt4Scale(p.x, p.n, p.factor, p.range);
        scales[group - first] = chosen.scale;
        lowest_int4_codes[group - first] = chosen.lowest_code;
      } else {
        scales[group - first] = ScaleOf(options, p);
        lowest_int4_codes[group - first] = -compression::kInt4MaxCode;
      }
    }
    for (int64_t group = first; group < last; ++group) {
      const int64_t begin = group * group_size;
      QuantizeGroup(options, prepared[group - first], scales[group - first], payload, begin,
                    stochastic ? &noise : nullptr, static_cast<uint64_t>(first_index + begin),
                    lowest_int4_codes[group - first]);
      std::memcpy(header + group * 4, &scales[group - first].scale, 4);
      if (sums != nullptr) {
        AddGroupError(options, prepared[group - first], payload, begin, scales[group - first].scale,
                      input + begin, sums);
      }
    }
  }
}

}  // namespace

absl::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "none";
    case Codec::kFp8E4M3:
      return "fp8e4m3";
    case Codec::kFp8E5M2:
      return "fp8e5m2";
    case Codec::kInt8:
      return "int8";
    case Codec::kInt4:
      return "int4";
    case Codec::kBf16:
      return "bf16";
  }
  return "?";
}

absl::StatusOr<Codec> ParseCodec(absl::string_view name) {
  std::string names;
  for (Codec codec : kAllCodecs) {
    if (CodecName(codec) == name) return codec;
    absl::StrAppend(&names, names.empty() ? "" : ", ", CodecName(codec));
  }
  if (name == "taco_fp8") {
    return absl::InvalidArgumentError(absl::StrCat(
        "codec 'taco_fp8' is fp8e4m3 with hadamard (its pre-scale cancelled; docs/sbp_and_boxing.md): "
        "use fp8e4m3 and set hadamard; the codecs are ", names));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown codec '", name, "'; the codecs are ", names));
}

uint64_t MixSeed(uint64_t seed, int64_t value) {
  // SplitMix64's finalizer over seed + (value + 1) * golden ratio.
  uint64_t z = seed + (static_cast<uint64_t>(value) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool RoundsStochastically(Codec codec) { return codec == Codec::kInt4 || codec == Codec::kInt8; }

absl::Status CheckCodecOptions(const CodecOptions& options) {
  if (options.group_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec ", CodecName(options.codec), ": group_size is ", options.group_size,
                     "; it must be >= 1"));
  }
  if (options.codec == Codec::kBf16 && options.hadamard) {
    return absl::InvalidArgumentError(
        "codec bf16: hadamard is set; bf16 rounds each element by itself and has no groups to rotate");
  }
  if (Rotates(options) &&
      (!IsPowerOfTwo(options.group_size) || options.group_size < kMinHadamardGroup ||
       options.group_size > kMaxHadamardGroup)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "codec ", CodecName(options.codec), " with hadamard: group_size is ",
        options.group_size, "; the Walsh-Hadamard transform needs a power of two in [",
        kMinHadamardGroup, ", ", kMaxHadamardGroup, "]"));
  }
  if (options.stochastic_rounding && !RoundsStochastically(options.codec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "codec ", CodecName(options.codec),
        ": stochastic_rounding is set; only int4 and int8 round stochastically"));
  }
  return absl::OkStatus();
}

int64_t EncodedBytes(const CodecOptions& options, int64_t count) {
  if (options.codec == Codec::kNone) return count * 4;
  return GroupCount(options, count) * ParametersPerGroup(options.codec) * 4 +
         PayloadBytes(options.codec, count);
}

void Encode(const CodecOptions& options, const float* input, int64_t count, void* out,
            int64_t first_index) {
  EncodeImpl(options, input, count, out, first_index, nullptr);
}

void EncodeMeasured(const CodecOptions& options, const float* input, int64_t count, void* out,
                    int64_t first_index, EncodingErrorSums* sums) {
  EncodeImpl(options, input, count, out, first_index, sums);
}

void Decode(const CodecOptions& options, const void* in, int64_t count, float* out) {
  DecodeImpl(options, in, count, DecodeMode::kStore, out);
}

void DecodeAccumulate(const CodecOptions& options, const void* in, int64_t count,
                      float* accumulator) {
  DecodeImpl(options, in, count, DecodeMode::kAccumulate, accumulator);
}

double RoundTripRelativeError(const CodecOptions& options, const float* input, int64_t count) {
  std::vector<uint8_t> encoded(EncodedBytes(options, count));
  std::vector<float> decoded(count);
  Encode(options, input, count, encoded.data());
  Decode(options, encoded.data(), count, decoded.data());
  double error = 0.0, norm = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double difference = static_cast<double>(decoded[i]) - input[i];
    error += difference * difference;
    norm += static_cast<double>(input[i]) * input[i];
  }
  if (norm == 0.0) return error == 0.0 ? 0.0 : std::sqrt(error);
  return std::sqrt(error / norm);
}

}  // namespace oneflow
