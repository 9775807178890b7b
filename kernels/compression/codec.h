// Codecs for compressed boxing: how a float tensor travels in fewer bytes.
//
// Every codec works on groups of `group_size` consecutive elements (the last group may
// be shorter) and is a pure function of its input: the same floats give the same bytes
// on every rank, so a rank that decodes its own encoding sees exactly what its peers
// see (compressed collectives rely on that for "same bits on every rank").
//
//   kFp8E4M3, kFp8E5M2  one f32 scale per group (max|x| mapped to the format's largest
//                       finite value), then each element x/scale as FP8, saturating,
//                       round-to-nearest-even.
//   kInt8, kInt4        symmetric integers (±127, ±7) with one f32 scale per group
//                       (max|x| / 127 or / 7); int4 packs two elements per byte. With
//                       `fitted_int4_scale` int4 picks each group's scale by its error
//                       (max|x| / 7 ... / 10) and may use code -8 (int_quant.h).
//   kBf16               each element rounded to bf16 (nearest even), no groups or scales:
//                       gradients reduced "in bf16" (bf16_codec.h; --gradient_wire).
// Options: `hadamard` rotates each group (fast Walsh-Hadamard, normalised, G a power of
// two in [32, 2048]; a short last group rotates in power-of-two pieces, hadamard.h)
// before quantizing and back after decoding, which spreads outliers over the group;
// `stochastic_rounding` (int4 and int8) rounds up with probability equal to the fraction,
// from a counter-based generator keyed by `seed` and the element index, so it is
// reproducible and still the same on every rank. The FP8 formats round to nearest only:
// their grid is not uniform, so the fraction is not one subtraction away.
//
// Wire format (docs/sbp_and_boxing.md, "Codecs and wire formats", has the details and the
// measured errors): for ng = ceil(count / G) groups, first ng f32 scales in host byte order,
// then the payload: one byte per element (FP8 code, int8), or
// int4 nibbles (element k in the low nibble of byte k / 2 when k is even, the high one when
// odd). No alignment is assumed: an encoding may start at any byte.
//
// Special values, the same for every codec and option:
//  - a group holding a NaN or +-Inf (or whose rotation overflows) decodes to NaN in every
//    element (its scale is NaN, its codes zero): non-finite stays non-finite;
//  - a group whose largest magnitude is below 2^-100 (all zeros, say) decodes to exact
//    zeros;
//  - a finite group never decodes to Inf: without rotation no decoded value exceeds the
//    group's largest magnitude (the FP8 conversions saturate; fp8.h).
// kNone is a copy of the floats: hadamard and the seed are ignored (group_size must still
// be >= 1). kBf16 has no groups either (group_size is ignored but must be >= 1; hadamard is
// refused) and is the exception to the special-value rules: each element is rounded by
// itself, so a NaN or Inf stays in its own element and a finite value beyond bf16's range
// becomes +-Inf (bf16_codec.h).
#ifndef KERNELS_COMPRESSION_CODEC_H_
#define KERNELS_COMPRESSION_CODEC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {

// FP8 E4M3 with `hadamard` is what shipped as "taco_fp8" (TACO's recipe, REFERENCES.md,
// arXiv 2604.24088): with one absmax scale per group TACO's adaptive pre-scale cancels, so
// its codes were these, sent with a second f32 per group (taco_equivalence_test).
enum class Codec { kNone, kFp8E4M3, kFp8E5M2, kInt8, kInt4, kBf16 };

// "none", "fp8e4m3", "fp8e5m2", "int8", "int4", "bf16".
absl::string_view CodecName(Codec codec);
// Inverse of CodecName; INVALID_ARGUMENT naming the text and listing the names (for
// "taco_fp8", saying it is fp8e4m3 with hadamard: a Codec has no room for the rotation).
absl::StatusOr<Codec> ParseCodec(absl::string_view name);

struct CodecOptions {
  Codec codec = Codec::kNone;
  int64_t group_size = 128;
  bool hadamard = false;
  bool stochastic_rounding = false;  // kInt4 and kInt8 (RoundsStochastically)
  uint64_t seed = 0;                 // for stochastic rounding
  // kInt4 rounded to nearest: each group's scale chosen by the error it makes
  // (compression::ChooseInt4Scale, int_quant.h: max|x| / 7 down to max|x| / 10, code -8
  // allowed) instead of max|x| / 7. Same wire format; decoders need not know. Ignored by
  // every other codec and under stochastic rounding (which needs the unclipped scale to
  // stay unbiased).
  bool fitted_int4_scale = false;
};

// A SplitMix64 mix of a seed and a value, for deriving stochastic rounding's seeds: per
// act from a step's rounding seed (kernels/boxing/step_proto.h), per encoding rank from
// the act's (compressed_collectives.h). Documented so that a test or a replay can
// reproduce an encoding.
uint64_t MixSeed(uint64_t seed, int64_t value);

// Whether the codec has a stochastic-rounding encoder: kInt4 and kInt8.
bool RoundsStochastically(Codec codec);

// INVALID_ARGUMENT naming the field when the options are not a valid combination
// (group_size < 1; hadamard with a group that is not a power of two in
// [32, 2048]; stochastic rounding with a codec other than kInt4 and kInt8; hadamard with
// kBf16).
absl::Status CheckCodecOptions(const CodecOptions& options);

// Bytes that carry `count` elements (count >= 0). kNone: count * 4; kBf16: count * 2.
int64_t EncodedBytes(const CodecOptions& options, int64_t count);

// Encodes `count` floats into EncodedBytes(options, count) bytes at `out`.
// Preconditions: CheckCodecOptions(options) is OK; the buffers do not overlap.
// `first_index` is the logical index of input[0] (it keys stochastic rounding, so that
// the pieces of a tensor encoded separately round as the whole would).
void Encode(const CodecOptions& options, const float* input, int64_t count, void* out,
            int64_t first_index = 0);

// What an encoding lost, summed over elements x in double: sum((decode(encode(x)) - x)^2)
// and sum(x^2). NaN error where a group held a NaN or Inf (it decodes to NaN).
struct EncodingErrorSums {
  double error_sq = 0;
  double signal_sq = 0;
};

// Encode, and what it lost measured on the way (added to *sums), without decoding: each
// group's codes are read back while the group is in cache and compared with what was
// quantized. For a rotated group that is the rotated y = Hx; H is orthonormal, so
// ||H(y') - x|| = ||y' - y|| and the decoder's inverse rotation is not needed to know the
// error. The bytes written are Encode's; the sums equal those of Decode + compare to
// float rounding (the decoder's rotation rounds, and each group's sums add in float
// lanes), not bit for bit. Why: the compressed collectives meter every encoding
// (compressed_collectives.h, "Error"), and decoding each sent chunk to meter it was a
// third pass over it (docs/benchmarks.md, "Session 46").
void EncodeMeasured(const CodecOptions& options, const float* input, int64_t count, void* out,
                    int64_t first_index, EncodingErrorSums* sums);

// out[i] = decoded element i.
void Decode(const CodecOptions& options, const void* in, int64_t count, float* out);

// accumulator[i] += decoded element i (fp32 accumulation for compressed reductions).
void DecodeAccumulate(const CodecOptions& options, const void* in, int64_t count, float* accumulator);

// Relative L2 error of a round trip, ||decode(encode(x)) - x|| / ||x|| (0 for x = 0):
// what compressed boxing reports per codec in the metrics.
double RoundTripRelativeError(const CodecOptions& options, const float* input, int64_t count);

}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_CODEC_H_
