// How fast a device encodes and decodes each codec: the input `--compression=auto` prices
// codec time with, like the link bandwidths it prices wire time with.
//
// The compiler never times anything (the same inputs give the same plan bytes). The
// numbers come from a table with documented defaults (below), which a user replaces
// with measurements of the target machine: `oneflow calibrate --out=FILE` times each
// configuration the compiler can pick and writes one JSON object per line,
//   {"codec": "int8", "group_size": 512, "hadamard": true, "bytes_per_second": 2.1e+09,
//    "elements": 1048576, "repetitions": 7}
// and the examples' `--codec_calibration=FILE` reads it back with
// ReadCodecCalibrationFile. A throughput is dense f32 bytes per second through one
// encode followed by one decode, on one thread; `oneflow calibrate` also times the
// passes apart ("encode_bytes_per_second", "decode_bytes_per_second", and
// "encode_measured_bytes_per_second", the encode that meters its own error as it goes,
// kernels/compression/codec.h EncodeMeasured), because the runtime does not make them in
// equal numbers (kernels/compression/compressed_collectives.h): without error feedback a
// compressed reduce-scatter encodes each element it sends once, metering as it encodes,
// and the receiver decodes it once; with error feedback the sender decodes it too (the
// residual needs the decoded values); a compressed all-gather encodes its shard once
// (metering as it encodes without error feedback) and decodes every shard.
// sbp/boxing/step_compression.h charges each pass; without separate figures a pass takes
// half the round trip's time, and without a measured-encode figure the metering encode
// takes the encode's.
//
// Two encoders do more work per element than the plain one (each group's scale from its
// largest magnitude, codes rounded to nearest): int4 with each group's scale chosen by its
// error (kernels/compression/int_quant.h ChooseInt4Scale: the gradients' steps under
// --int4_gradient_scale=fitted) tries seven scales per group, and stochastic rounding
// (--codec_rounding=stochastic, int4 and int8) draws a random number per element. calibrate
// times their encode too ("encode_fitted_bytes_per_second",
// "encode_stochastic_bytes_per_second"); a pass of such an encoder, plain or metering, is
// charged the plain pass plus the extra time the variant's encode took over the plain
// encode (the extra work is the same in both: the metering is a read-back of the codes).
// Without the figure the extra work is priced at kDefaultExtraEncodeBytesPerSecond.
#ifndef SBP_CODEC_THROUGHPUT_H_
#define SBP_CODEC_THROUGHPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sbp/compression.h"

namespace oneflow {

// Which encoder a pass runs (above): the plain one, int4 with its scale fitted by error
// (CodecOptions::fitted_int4_scale), or stochastic rounding.
enum class EncoderVariant { kPlain, kFittedInt4Scale, kStochasticRounding };

// "plain", "fitted int4 scale", "stochastic rounding".
absl::string_view EncoderVariantName(EncoderVariant variant);

// Whether `choice`'s codec has the variant's encoder: the fitted scale is int4's,
// stochastic rounding int4's and int8's; every codec has the plain one.
bool HasEncoderVariant(const CompressionChoice& choice, EncoderVariant variant);

// The extra dense bytes per second of a variant's encode where no figure measured it (a
// configuration without an entry, an entry set from a round trip, a file written before
// calibrate timed the variants): a pass of n bytes costs n / this on top of the plain
// pass. About half the extra rate codec_bench and calibrate measured on the development
// machine for the int4 and int8 configurations the compiler picks (codec_throughput.cc
// has the figures), so that an uncalibrated `auto` errs towards dense.
double DefaultExtraEncodeBytesPerSecond(EncoderVariant variant);

class CodecThroughput {
 public:
  struct Entry {
    CompressionChoice choice;
    // One encode followed by one decode; and each pass alone.
    double bytes_per_second = 0;
    double encode_bytes_per_second = 0;
    double decode_bytes_per_second = 0;
    // EncodeMeasured alone; 0 when not measured (the defaults, files written before
    // calibrate measured it): the encode's rate stands in, which leaves out the read-back
    // of each group's codes (0.13-0.61 of a round trip by codec in one calibrate run,
    // docs/sbp_and_boxing.md "Compressed collectives").
    double encode_measured_bytes_per_second = 0;
    // The fitted-scale encode (int4) and the stochastically rounding one (int4, int8)
    // alone; 0 when not measured (DefaultExtraEncodeBytesPerSecond prices the extra work).
    double encode_fitted_bytes_per_second = 0;
    double encode_stochastic_bytes_per_second = 0;
  };

  // The documented defaults: one entry per configuration the compiler can pick
  // (PickableCodecs in sbp/compression_policy.h), measured with `oneflow calibrate` on
  // the development machine (docs/sbp_and_boxing.md has the figures) and rounded down,
  // so an uncalibrated `auto` errs towards dense; other configurations get the slowest.
  static CodecThroughput Defaults();

  // Every configuration at `bytes_per_second` (the examples' --codec_bytes_per_second).
  static CodecThroughput Uniform(double bytes_per_second);

  // The entry of exactly this configuration, else the value for configurations without
  // one (a group size no default names, say).
  double BytesPerSecond(const CompressionChoice& choice) const;

  // Seconds of one encode pass, and of one decode pass, over `dense_bytes` f32 bytes.
  // A variant the codec does not have (HasEncoderVariant) prices as the plain encoder:
  // the runtime runs the plain one there.
  double EncodeSeconds(const CompressionChoice& choice, double dense_bytes,
                       EncoderVariant variant = EncoderVariant::kPlain) const;
  double DecodeSeconds(const CompressionChoice& choice, double dense_bytes) const;
  // ... and of one encode that meters its error as it goes (EncodeMeasured): the
  // measured-encode rate where the entry has one, else the encode's; plus the variant's
  // extra work.
  double EncodeMeasuredSeconds(const CompressionChoice& choice, double dense_bytes,
                               EncoderVariant variant = EncoderVariant::kPlain) const;
  // The variant's extra seconds over the plain encode of `dense_bytes` (0 for kPlain and
  // for a variant the codec does not have): measured, the variant's encode time less the
  // plain encode's (never below 0); else at DefaultExtraEncodeBytesPerSecond.
  double ExtraEncodeSeconds(const CompressionChoice& choice, double dense_bytes, EncoderVariant variant) const;

  // Adds or replaces the entry of `choice`, each pass at twice the round trip's rate.
  // Precondition: bytes_per_second > 0 and finite.
  void Set(const CompressionChoice& choice, double bytes_per_second);
  // Adds or replaces the entry of `choice` from the two passes timed apart; the round
  // trip is 1 / (1/encode + 1/decode). Preconditions: both > 0 and finite;
  // encode_measured_bytes_per_second >= 0 (0: not measured, see Entry).
  void SetPasses(const CompressionChoice& choice, double encode_bytes_per_second,
                 double decode_bytes_per_second, double encode_measured_bytes_per_second = 0);
  // Sets the measured encode rate of `variant` (not kPlain; one the codec has) on the
  // entry of `choice`, which Set or SetPasses made. Preconditions: as said, and
  // bytes_per_second > 0 and finite.
  void SetVariantEncode(const CompressionChoice& choice, EncoderVariant variant, double bytes_per_second);

  const std::vector<Entry>& entries() const { return entries_; }
  double other_configurations() const { return other_configurations_; }

 private:
  explicit CodecThroughput(double other_configurations) : other_configurations_(other_configurations) {}
  // The entry of exactly `choice`, or nullptr.
  const Entry* Find(const CompressionChoice& choice) const;
  // Adds or replaces the entry of updated.choice.
  void Put(const Entry& updated);

  std::vector<Entry> entries_;
  double other_configurations_;
};

// One line of a calibration file: a configuration, its measured throughput, and how it
// was measured (informational; the compiler reads only the first two).
struct CodecMeasurement {
  CompressionChoice choice;
  double bytes_per_second = 0;
  // Each pass timed alone; 0 when the line does not give them (both or neither).
  double encode_bytes_per_second = 0;
  double decode_bytes_per_second = 0;
  int64_t elements = 0;
  int64_t repetitions = 0;
  // EncodeMeasured timed alone; 0 when the line does not give it (it comes only with the
  // two passes above).
  double encode_measured_bytes_per_second = 0;
  // The fitted-scale encode (int4 only) and the stochastically rounding encode (int4 and
  // int8 only) timed alone; 0 when the line does not give them (they come only with the
  // two passes above).
  double encode_fitted_bytes_per_second = 0;
  double encode_stochastic_bytes_per_second = 0;
};

// Adds or replaces the entry of measurement.choice in *throughput: SetPasses when the
// line gives the passes apart (and SetVariantEncode for each variant it gives), else Set
// with its round trip.
void AddCodecMeasurement(const CodecMeasurement& measurement, CodecThroughput* throughput);

// The JSON object of the top of this file, without a newline, with
// "encode_bytes_per_second" and "decode_bytes_per_second" after "bytes_per_second" when
// they are > 0, then "encode_measured_bytes_per_second", "encode_fitted_bytes_per_second"
// and "encode_stochastic_bytes_per_second", each when it is > 0 too. Throughputs
// are written with 6 significant digits;
// ParseCodecCalibration reads back exactly what is written.
std::string CodecMeasurementLine(const CodecMeasurement& measurement);

// The measurements of a calibration file's text: one JSON object per line, blank lines
// skipped. Keys: codec (a name of CompressionKindName other than "none"), group_size
// (an integer the codec accepts), hadamard (true/false), bytes_per_second (a finite
// number > 0), optionally encode_bytes_per_second and decode_bytes_per_second (both or
// neither, finite numbers > 0), optionally encode_measured_bytes_per_second (a finite
// number > 0, only with the two), optionally encode_fitted_bytes_per_second (int4 only)
// and encode_stochastic_bytes_per_second (int4 and int8 only), finite numbers > 0 only with
// the two, and optionally elements and repetitions (integers >= 1).
// Lines of the other kinds a calibration file holds (a "link", "compute" or "host" key,
// sbp/calibration.h) are skipped here. INVALID_ARGUMENT naming `file` and the line, e.g.
//   codec calibration file 'codecs.jsonl' line 3: unknown key "speed"; valid keys: codec,
//   group_size, hadamard, bytes_per_second, encode_bytes_per_second,
//   decode_bytes_per_second, encode_measured_bytes_per_second,
//   encode_fitted_bytes_per_second, encode_stochastic_bytes_per_second, elements, repetitions
// also for a line that repeats an earlier line's configuration and for a file with no
// measurement at all. The deprecated codec name "taco_fp8" (files written before the
// codec was named for what it is) reads as fp8e4m3 with hadamard, whatever its line says of
// hadamard, and prints one warning to stderr per file:
//   warning: codec calibration file 'F' line 3: codec "taco_fp8" is deprecated; it is
//   fp8e4m3 with hadamard and is read as such: write "codec": "fp8e4m3", "hadamard": true
//   (`oneflow calibrate --out=FILE` does)
absl::StatusOr<std::vector<CodecMeasurement>> ParseCodecCalibration(absl::string_view text,
                                                                     absl::string_view file);

// CodecThroughput::Defaults() with every configuration the file at `path` measures
// replaced by its measurement. Errors: ParseCodecCalibration's, or NOT_FOUND /
// INVALID_ARGUMENT "codec calibration file 'F': cannot open: No such file or directory".
absl::StatusOr<CodecThroughput> ReadCodecCalibrationFile(const std::string& path);

}  // namespace oneflow

#endif  // SBP_CODEC_THROUGHPUT_H_
