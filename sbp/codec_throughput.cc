#include "sbp/codec_throughput.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sbp/json_line.h"

namespace oneflow {
namespace {

// Dense f32 bytes per second through one encode and one decode, single thread, of 1 Mi
// Gaussian floats. `oneflow calibrate` on the development machine (x86-64 server core
// with AVX-512, -O2 -march=x86-64-v3; glibc memcpy ~12 GB/s on one thread) measured, best
// of several idle runs: taco_fp8 (now fp8e4m3 G=128 hadamard, which skips its pre-scale
// pass and second scale) 2.9e9, int8 G=512 hadamard 3.7e9, int4 G=128 hadamard
// 4.4e9, int8 G=128 1.3e10, fp8e4m3 G=128 7.9e9, int4 G=128 1e10; busy machines measured
// down to a third of that. The defaults are about half the idle figures, so that an
// uncalibrated `auto` errs towards dense on slower cores; a configuration without an
// entry gets the slowest.
struct DefaultEntry {
  CompressionChoice choice;
  double bytes_per_second;
};
constexpr double kSlowestDefault = 1.5e9;
const DefaultEntry kDefaults[] = {
    {{CompressionKind::kFp8E4M3, 128, true}, 1.5e9},   // activations (TACO's codec)
    {{CompressionKind::kInt8, 512, true}, 2e9},        // gradients, in the node
    {{CompressionKind::kInt4, 128, true}, 2e9},        // gradients, across nodes
    {{CompressionKind::kInt8, 128, false}, 5e9},       // weight gathers, --compression=int8
    {{CompressionKind::kFp8E4M3, 128, false}, 4e9},    // --compression=fp8, hints
    // --compression=int4 (groups of 32): codec_bench's round trip at G=32 was 0.77x its
    // G=128 figure in one run (2.37 vs 3.08 GB/s, loaded machine), applied to G=128's 5e9
    // default and rounded down.
    {{CompressionKind::kInt4, 32, false}, 3.5e9},
    // --gradient_wire (bf16 has no groups; its group size is 1): codec_bench's round trip
    // of 2^20 floats (-c opt, one run, load average ~5 on 2 cores) was 7.35 GB/s against
    // int8 G=128's 5.07 in the same run; int8 G=128's 5e9 default scaled by that ratio
    // and rounded down.
    {{CompressionKind::kBf16, 1, false}, 7e9},
};

// The extra work of the encoder variants (codec_throughput.h), as extra dense bytes per
// second: a variant's pass of n bytes costs n / rate over the plain pass. Measured as
// 1 / (1 / variant encode - 1 / plain encode) by `oneflow calibrate` (one thread, 1 Mi
// Gaussian floats, -c opt, two runs, load ~1.5 on the 2-core development machine):
//   fitted int4 scale    int4 G=32 1.80e9 (its encode 8.3e9 -> 1.48e9), int4 G=128
//                        hadamard 3.15e9 (8.5e9 -> 2.3e9)
//   stochastic rounding  1.24e9-1.28e9 for each of int4 G=32, int4 G=128 hadamard,
//                        int8 G=128 (1.92e10 -> 1.2e9) and int8 G=512 hadamard: a random
//                        draw per element, whatever the codec
// The defaults are about half the smallest figure, rounded down.
constexpr double kDefaultExtraFittedBytesPerSecond = 9e8;
constexpr double kDefaultExtraStochasticBytesPerSecond = 6e8;

constexpr absl::string_view kValidKeys =
    "codec, group_size, hadamard, bytes_per_second, encode_bytes_per_second, decode_bytes_per_second, "
    "encode_measured_bytes_per_second, encode_fitted_bytes_per_second, encode_stochastic_bytes_per_second, "
    "elements, repetitions";

absl::StatusOr<double> PositiveRate(const std::string& key, const JsonValue& value) {
  double number = 0;
  if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtod(value.text, &number) || !std::isfinite(number) ||
      number <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\" is ", value.text, "; it must be a finite number > 0"));
  }
  return number;
}

// The name files written before fp8e4m3 with hadamard was named for what it is.
constexpr absl::string_view kRenamedTaco = "taco_fp8";

absl::StatusOr<CompressionKind> CodecNamed(const std::string& name) {
  for (CompressionKind kind : {CompressionKind::kFp8E4M3, CompressionKind::kFp8E5M2, CompressionKind::kInt4,
                               CompressionKind::kInt8, CompressionKind::kBf16}) {
    if (CompressionKindName(kind) == name) return kind;
  }
  if (name == kRenamedTaco) return CompressionKind::kFp8E4M3;  // rotated: see Measurement
  return absl::InvalidArgumentError(
      absl::StrCat("\"codec\" is \"", name, "\"; valid: fp8e4m3, fp8e5m2, int4, int8, bf16"));
}

absl::StatusOr<int64_t> PositiveInteger(const std::string& key, const JsonValue& value) {
  int64_t number = 0;
  if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtoi(value.text, &number) || number < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\" is ", value.text, "; it must be an integer >= 1"));
  }
  return number;
}

// The measurement of one parsed line; `renamed` says whether it named the codec
// "taco_fp8".
absl::StatusOr<CodecMeasurement> Measurement(const std::vector<std::pair<std::string, JsonValue>>& members,
                                             bool* renamed) {
  CodecMeasurement measurement;
  std::optional<CompressionKind> kind;
  bool has_group = false, has_hadamard = false, has_throughput = false;
  for (const auto& [key, value] : members) {
    if (key == "codec") {
      if (value.type != JsonValue::Type::kString) {
        return absl::InvalidArgumentError(absl::StrCat("\"codec\" is ", value.text, "; it must be a string"));
      }
      absl::StatusOr<CompressionKind> named = CodecNamed(value.text);
      if (!named.ok()) return named.status();
      kind = *named;
      *renamed = value.text == kRenamedTaco;
    } else if (key == "group_size") {
      absl::StatusOr<int64_t> group = PositiveInteger(key, value);
      if (!group.ok()) return group.status();
      measurement.choice.group_size = *group;
      has_group = true;
    } else if (key == "hadamard") {
      if (value.type != JsonValue::Type::kBool) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"hadamard\" is ", value.text, "; it must be true or false"));
      }
      measurement.choice.hadamard = value.text == "true";
      has_hadamard = true;
    } else if (double* rate_field = key == "bytes_per_second"                    ? &measurement.bytes_per_second
                                    : key == "encode_bytes_per_second"           ? &measurement.encode_bytes_per_second
                                    : key == "decode_bytes_per_second"           ? &measurement.decode_bytes_per_second
                                    : key == "encode_measured_bytes_per_second"  ? &measurement.encode_measured_bytes_per_second
                                    : key == "encode_fitted_bytes_per_second"    ? &measurement.encode_fitted_bytes_per_second
                                    : key == "encode_stochastic_bytes_per_second"
                                        ? &measurement.encode_stochastic_bytes_per_second
                                        : nullptr;
               rate_field != nullptr) {
      absl::StatusOr<double> rate = PositiveRate(key, value);
      if (!rate.ok()) return rate.status();
      *rate_field = *rate;
      has_throughput |= key == "bytes_per_second";
    } else if (key == "elements" || key == "repetitions") {
      absl::StatusOr<int64_t> count = PositiveInteger(key, value);
      if (!count.ok()) return count.status();
      (key == "elements" ? measurement.elements : measurement.repetitions) = *count;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown key \"", key, "\"; valid keys: ", kValidKeys));
    }
  }
  for (const auto& [present, key] : {std::pair<bool, const char*>{kind.has_value(), "codec"},
                                     {has_group, "group_size"},
                                     {has_hadamard, "hadamard"},
                                     {has_throughput, "bytes_per_second"}}) {
    if (!present) return absl::InvalidArgumentError(absl::StrCat("missing key \"", key, "\""));
  }
  if ((measurement.encode_bytes_per_second > 0) != (measurement.decode_bytes_per_second > 0)) {
    return absl::InvalidArgumentError(
        "\"encode_bytes_per_second\" and \"decode_bytes_per_second\" go together: give both or neither");
  }
  for (const auto& [rate, key] :
       {std::pair<double, const char*>{measurement.encode_measured_bytes_per_second, "encode_measured_bytes_per_second"},
        {measurement.encode_fitted_bytes_per_second, "encode_fitted_bytes_per_second"},
        {measurement.encode_stochastic_bytes_per_second, "encode_stochastic_bytes_per_second"}}) {
    if (rate > 0 && measurement.encode_bytes_per_second == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", key, "\" comes with \"encode_bytes_per_second\" and \"decode_bytes_per_second\": give all three "
          "or leave it out"));
    }
  }
  measurement.choice.kind = *kind;
  for (const auto& [rate, variant, key] :
       {std::tuple<double, EncoderVariant, const char*>{measurement.encode_fitted_bytes_per_second,
                                                        EncoderVariant::kFittedInt4Scale,
                                                        "encode_fitted_bytes_per_second"},
        {measurement.encode_stochastic_bytes_per_second, EncoderVariant::kStochasticRounding,
         "encode_stochastic_bytes_per_second"}}) {
    if (rate > 0 && !HasEncoderVariant(measurement.choice, variant)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", key, "\" is given for codec ", CompressionKindName(measurement.choice.kind),
          ", which has no ", EncoderVariantName(variant), " encoder (",
          variant == EncoderVariant::kFittedInt4Scale ? "int4's only" : "int4's and int8's only", ")"));
    }
  }
  // taco_fp8 always rotated (its lines said "hadamard": false); its throughput, with a
  // pass and a scale more than fp8e4m3 hadamard, errs towards dense.
  if (*renamed) measurement.choice.hadamard = true;
  if (absl::Status valid = CheckCompressionChoice(measurement.choice); !valid.ok()) return valid;
  return measurement;
}

}  // namespace

absl::string_view EncoderVariantName(EncoderVariant variant) {
  switch (variant) {
    case EncoderVariant::kPlain:
      return "plain";
    case EncoderVariant::kFittedInt4Scale:
      return "fitted int4 scale";
    case EncoderVariant::kStochasticRounding:
      return "stochastic rounding";
  }
  return "plain";
}

bool HasEncoderVariant(const CompressionChoice& choice, EncoderVariant variant) {
  switch (variant) {
    case EncoderVariant::kPlain:
      return true;
    case EncoderVariant::kFittedInt4Scale:
      return choice.kind == CompressionKind::kInt4;
    case EncoderVariant::kStochasticRounding:
      return choice.kind == CompressionKind::kInt4 || choice.kind == CompressionKind::kInt8;
  }
  return false;
}

double DefaultExtraEncodeBytesPerSecond(EncoderVariant variant) {
  return variant == EncoderVariant::kFittedInt4Scale ? kDefaultExtraFittedBytesPerSecond
                                                     : kDefaultExtraStochasticBytesPerSecond;
}

CodecThroughput CodecThroughput::Defaults() {
  CodecThroughput table(kSlowestDefault);
  for (const DefaultEntry& entry : kDefaults) table.Set(entry.choice, entry.bytes_per_second);
  return table;
}

CodecThroughput CodecThroughput::Uniform(double bytes_per_second) {
  return CodecThroughput(bytes_per_second);
}

double CodecThroughput::BytesPerSecond(const CompressionChoice& choice) const {
  const Entry* entry = Find(choice);
  return entry != nullptr ? entry->bytes_per_second : other_configurations_;
}

const CodecThroughput::Entry* CodecThroughput::Find(const CompressionChoice& choice) const {
  for (const Entry& entry : entries_) {
    if (entry.choice == choice) return &entry;
  }
  return nullptr;
}

double CodecThroughput::EncodeSeconds(const CompressionChoice& choice, double dense_bytes,
                                      EncoderVariant variant) const {
  const Entry* entry = Find(choice);
  const double plain = dense_bytes / (entry != nullptr ? entry->encode_bytes_per_second : 2 * other_configurations_);
  return plain + ExtraEncodeSeconds(choice, dense_bytes, variant);
}

double CodecThroughput::EncodeMeasuredSeconds(const CompressionChoice& choice, double dense_bytes,
                                              EncoderVariant variant) const {
  const Entry* entry = Find(choice);
  if (entry == nullptr || entry->encode_measured_bytes_per_second <= 0) {
    return EncodeSeconds(choice, dense_bytes, variant);
  }
  return dense_bytes / entry->encode_measured_bytes_per_second + ExtraEncodeSeconds(choice, dense_bytes, variant);
}

double CodecThroughput::ExtraEncodeSeconds(const CompressionChoice& choice, double dense_bytes,
                                           EncoderVariant variant) const {
  if (variant == EncoderVariant::kPlain || !HasEncoderVariant(choice, variant)) return 0;
  const Entry* entry = Find(choice);
  const double measured = entry == nullptr                                    ? 0
                          : variant == EncoderVariant::kFittedInt4Scale ? entry->encode_fitted_bytes_per_second
                                                                        : entry->encode_stochastic_bytes_per_second;
  if (measured > 0) {
    return std::max(0.0, dense_bytes / measured - dense_bytes / entry->encode_bytes_per_second);
  }
  return dense_bytes / DefaultExtraEncodeBytesPerSecond(variant);
}

double CodecThroughput::DecodeSeconds(const CompressionChoice& choice, double dense_bytes) const {
  const Entry* entry = Find(choice);
  return dense_bytes / (entry != nullptr ? entry->decode_bytes_per_second : 2 * other_configurations_);
}

void CodecThroughput::Set(const CompressionChoice& choice, double bytes_per_second) {
  Put(Entry{choice, bytes_per_second, 2 * bytes_per_second, 2 * bytes_per_second});
}

void CodecThroughput::SetPasses(const CompressionChoice& choice, double encode_bytes_per_second,
                                double decode_bytes_per_second, double encode_measured_bytes_per_second) {
  Put(Entry{choice, 1 / (1 / encode_bytes_per_second + 1 / decode_bytes_per_second), encode_bytes_per_second,
            decode_bytes_per_second, encode_measured_bytes_per_second});
}

void CodecThroughput::SetVariantEncode(const CompressionChoice& choice, EncoderVariant variant,
                                       double bytes_per_second) {
  for (Entry& entry : entries_) {
    if (entry.choice != choice) continue;
    (variant == EncoderVariant::kFittedInt4Scale ? entry.encode_fitted_bytes_per_second
                                                 : entry.encode_stochastic_bytes_per_second) = bytes_per_second;
  }
}

void CodecThroughput::Put(const Entry& updated) {
  for (Entry& entry : entries_) {
    if (entry.choice == updated.choice) {
      entry = updated;
      return;
    }
  }
  entries_.push_back(updated);
}

void AddCodecMeasurement(const CodecMeasurement& measurement, CodecThroughput* throughput) {
  if (measurement.encode_bytes_per_second > 0) {
    throughput->SetPasses(measurement.choice, measurement.encode_bytes_per_second,
                          measurement.decode_bytes_per_second, measurement.encode_measured_bytes_per_second);
    if (measurement.encode_fitted_bytes_per_second > 0) {
      throughput->SetVariantEncode(measurement.choice, EncoderVariant::kFittedInt4Scale,
                                   measurement.encode_fitted_bytes_per_second);
    }
    if (measurement.encode_stochastic_bytes_per_second > 0) {
      throughput->SetVariantEncode(measurement.choice, EncoderVariant::kStochasticRounding,
                                   measurement.encode_stochastic_bytes_per_second);
    }
  } else {
    throughput->Set(measurement.choice, measurement.bytes_per_second);
  }
}

std::string CodecMeasurementLine(const CodecMeasurement& measurement) {
  std::string passes;
  if (measurement.encode_bytes_per_second > 0 && measurement.decode_bytes_per_second > 0) {
    passes = absl::StrFormat(", \"encode_bytes_per_second\": %.6g, \"decode_bytes_per_second\": %.6g",
                             measurement.encode_bytes_per_second, measurement.decode_bytes_per_second);
    for (const auto& [rate, key] :
         {std::pair<double, const char*>{measurement.encode_measured_bytes_per_second,
                                         "encode_measured_bytes_per_second"},
          {measurement.encode_fitted_bytes_per_second, "encode_fitted_bytes_per_second"},
          {measurement.encode_stochastic_bytes_per_second, "encode_stochastic_bytes_per_second"}}) {
      if (rate > 0) absl::StrAppendFormat(&passes, ", \"%s\": %.6g", key, rate);
    }
  }
  return absl::StrFormat(
      "{\"codec\": \"%s\", \"group_size\": %d, \"hadamard\": %s, \"bytes_per_second\": %.6g%s, "
      "\"elements\": %d, \"repetitions\": %d}",
      CompressionKindName(measurement.choice.kind), measurement.choice.group_size,
      measurement.choice.hadamard ? "true" : "false", measurement.bytes_per_second, passes,
      measurement.elements, measurement.repetitions);
}

absl::StatusOr<std::vector<CodecMeasurement>> ParseCodecCalibration(absl::string_view text,
                                                                     absl::string_view file) {
  std::vector<CodecMeasurement> measurements;
  std::vector<int> lines_of;  // The line each measurement came from.
  int number = 0;
  int first_renamed = 0;  // The first line naming taco_fp8, if any.
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    auto fail = [&](const absl::Status& status) {
      return absl::InvalidArgumentError(
          absl::StrCat("codec calibration file '", file, "' line ", number, ": ", status.message()));
    };
    auto members = LineParser(line).Object();
    if (!members.ok()) return fail(members.status());
    if (!members->empty() && (members->front().first == "link" || members->front().first == "compute" ||
                              members->front().first == "host" || members->front().first == "machine" ||
                              members->front().first == "transfer")) {
      continue;  // sbp/calibration.h reads these.
    }
    bool renamed = false;
    absl::StatusOr<CodecMeasurement> measurement = Measurement(*members, &renamed);
    if (!measurement.ok()) return fail(measurement.status());
    if (renamed && first_renamed == 0) first_renamed = number;
    for (size_t i = 0; i < measurements.size(); ++i) {
      if (measurements[i].choice == measurement->choice) {
        return fail(absl::InvalidArgumentError(
            absl::StrCat(CompressionChoiceText(measurement->choice), " is measured twice (also on line ",
                         lines_of[i], "); keep one line per configuration")));
      }
    }
    measurements.push_back(*measurement);
    lines_of.push_back(number);
  }
  if (measurements.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "codec calibration file '", file, "' has no measurement; write one with `oneflow calibrate --out=",
        file, "`"));
  }
  if (first_renamed > 0) {
    std::fprintf(stderr,
                 "warning: codec calibration file '%.*s' line %d: codec \"taco_fp8\" is deprecated; it is "
                 "fp8e4m3 with hadamard and is read as such: write \"codec\": \"fp8e4m3\", \"hadamard\": true "
                 "(`oneflow calibrate --out=FILE` does)\n",
                 static_cast<int>(file.size()), file.data(), first_renamed);
  }
  return measurements;
}

absl::StatusOr<CodecThroughput> ReadCodecCalibrationFile(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec calibration file '", path, "': is a directory, not a calibration file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    const int error = errno;
    const std::string message =
        absl::StrCat("codec calibration file '", path, "': cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("codec calibration file '", path, "': cannot read"));
  }
  absl::StatusOr<std::vector<CodecMeasurement>> measurements = ParseCodecCalibration(text.str(), path);
  if (!measurements.ok()) return measurements.status();
  CodecThroughput throughput = CodecThroughput::Defaults();
  for (const CodecMeasurement& measurement : *measurements) AddCodecMeasurement(measurement, &throughput);
  return throughput;
}

}  // namespace oneflow
