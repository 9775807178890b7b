#include "sbp/codec_throughput.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace oneflow {
namespace {

// Dense f32 bytes per second through one encode and one decode, single thread, of 1 Mi
// Gaussian floats. `oneflow calibrate` on the development machine (x86-64 server core
// with AVX-512, -O2 -march=x86-64-v3; glibc memcpy ~12 GB/s on one thread) measured, best
// of several idle runs: taco_fp8 2.9e9, int8 G=512 hadamard 3.7e9, int4 G=128 hadamard
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
    {{CompressionKind::kTacoFp8, 128, false}, 1.5e9},  // activations (TACO)
    {{CompressionKind::kInt8, 512, true}, 2e9},        // gradients, in the node
    {{CompressionKind::kInt4, 128, true}, 2e9},        // gradients, across nodes
    {{CompressionKind::kInt8, 128, false}, 5e9},       // weight gathers, --compression=int8
    {{CompressionKind::kFp8E4M3, 128, false}, 4e9},    // --compression=fp8, hints
    {{CompressionKind::kInt4, 128, false}, 5e9},       // --compression=int4
};

// A flat JSON object's value: a string, a number (kept as written) or a boolean.
struct JsonValue {
  enum class Type { kString, kNumber, kBool };
  Type type = Type::kString;
  std::string text;
};

// Reads one flat JSON object ({"key": value, ...}, values without nesting or escapes
// beyond \" and \\), the only shape calibration files have.
class LineParser {
 public:
  explicit LineParser(absl::string_view line) : line_(line) {}

  absl::StatusOr<std::vector<std::pair<std::string, JsonValue>>> Object() {
    std::vector<std::pair<std::string, JsonValue>> members;
    if (!Consume('{')) return Error("expected '{' to start a JSON object");
    if (Consume('}')) return AtEnd(std::move(members));
    while (true) {
      absl::StatusOr<std::string> key = String("a key in double quotes");
      if (!key.ok()) return key.status();
      if (!Consume(':')) return Error(absl::StrCat("expected ':' after key \"", *key, "\""));
      absl::StatusOr<JsonValue> value = Value(*key);
      if (!value.ok()) return value.status();
      members.emplace_back(*std::move(key), *std::move(value));
      if (Consume('}')) return AtEnd(std::move(members));
      if (!Consume(',')) return Error(absl::StrCat("expected ',' or '}' after the value of \"",
                                                   members.back().first, "\""));
    }
  }

 private:
  void SkipSpace() {
    while (position_ < line_.size() && absl::ascii_isspace(line_[position_])) ++position_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (position_ < line_.size() && line_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("column ", position_ + 1, ": ", what));
  }
  absl::StatusOr<std::vector<std::pair<std::string, JsonValue>>> AtEnd(
      std::vector<std::pair<std::string, JsonValue>> members) {
    SkipSpace();
    if (position_ != line_.size()) return Error("unexpected text after the object's '}'");
    return members;
  }
  absl::StatusOr<std::string> String(absl::string_view what) {
    if (!Consume('"')) return Error(absl::StrCat("expected ", what));
    std::string text;
    while (position_ < line_.size() && line_[position_] != '"') {
      if (line_[position_] == '\\' && position_ + 1 < line_.size()) ++position_;
      text.push_back(line_[position_++]);
    }
    if (position_ == line_.size()) return Error("unterminated string");
    ++position_;
    return text;
  }
  absl::StatusOr<JsonValue> Value(const std::string& key) {
    SkipSpace();
    if (position_ < line_.size() && line_[position_] == '"') {
      absl::StatusOr<std::string> text = String("a string");
      if (!text.ok()) return text.status();
      return JsonValue{JsonValue::Type::kString, *std::move(text)};
    }
    const size_t begin = position_;
    while (position_ < line_.size() && (absl::ascii_isalnum(line_[position_]) ||
                                        line_[position_] == '.' || line_[position_] == '-' ||
                                        line_[position_] == '+')) {
      ++position_;
    }
    const std::string token(line_.substr(begin, position_ - begin));
    if (token == "true" || token == "false") return JsonValue{JsonValue::Type::kBool, token};
    double number = 0;
    if (!token.empty() && absl::SimpleAtod(token, &number)) {
      return JsonValue{JsonValue::Type::kNumber, token};
    }
    position_ = begin;
    return Error(absl::StrCat("the value of \"", key, "\" is not a string, number, true or false"));
  }

  absl::string_view line_;
  size_t position_ = 0;
};

constexpr absl::string_view kValidKeys =
    "codec, group_size, hadamard, bytes_per_second, elements, repetitions";

absl::StatusOr<CompressionKind> CodecNamed(const std::string& name) {
  for (CompressionKind kind : {CompressionKind::kFp8E4M3, CompressionKind::kFp8E5M2, CompressionKind::kInt4,
                               CompressionKind::kInt8, CompressionKind::kTacoFp8}) {
    if (CompressionKindName(kind) == name) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"codec\" is \"", name, "\"; valid: fp8e4m3, fp8e5m2, int4, int8, taco_fp8"));
}

absl::StatusOr<int64_t> PositiveInteger(const std::string& key, const JsonValue& value) {
  int64_t number = 0;
  if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtoi(value.text, &number) || number < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\" is ", value.text, "; it must be an integer >= 1"));
  }
  return number;
}

// The measurement of one parsed line.
absl::StatusOr<CodecMeasurement> Measurement(const std::vector<std::pair<std::string, JsonValue>>& members) {
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
    } else if (key == "bytes_per_second") {
      double number = 0;
      if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtod(value.text, &number) ||
          !std::isfinite(number) || number <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "\"bytes_per_second\" is ", value.text, "; it must be a finite number > 0"));
      }
      measurement.bytes_per_second = number;
      has_throughput = true;
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
  measurement.choice.kind = *kind;
  if (absl::Status valid = CheckCompressionChoice(measurement.choice); !valid.ok()) return valid;
  return measurement;
}

}  // namespace

CodecThroughput CodecThroughput::Defaults() {
  CodecThroughput table(kSlowestDefault);
  for (const DefaultEntry& entry : kDefaults) table.Set(entry.choice, entry.bytes_per_second);
  return table;
}

CodecThroughput CodecThroughput::Uniform(double bytes_per_second) {
  return CodecThroughput(bytes_per_second);
}

double CodecThroughput::BytesPerSecond(const CompressionChoice& choice) const {
  for (const Entry& entry : entries_) {
    if (entry.choice == choice) return entry.bytes_per_second;
  }
  return other_configurations_;
}

void CodecThroughput::Set(const CompressionChoice& choice, double bytes_per_second) {
  for (Entry& entry : entries_) {
    if (entry.choice == choice) {
      entry.bytes_per_second = bytes_per_second;
      return;
    }
  }
  entries_.push_back(Entry{choice, bytes_per_second});
}

std::string CodecMeasurementLine(const CodecMeasurement& measurement) {
  return absl::StrFormat(
      "{\"codec\": \"%s\", \"group_size\": %d, \"hadamard\": %s, \"bytes_per_second\": %.6g, "
      "\"elements\": %d, \"repetitions\": %d}",
      CompressionKindName(measurement.choice.kind), measurement.choice.group_size,
      measurement.choice.hadamard ? "true" : "false", measurement.bytes_per_second,
      measurement.elements, measurement.repetitions);
}

absl::StatusOr<std::vector<CodecMeasurement>> ParseCodecCalibration(absl::string_view text,
                                                                     absl::string_view file) {
  std::vector<CodecMeasurement> measurements;
  std::vector<int> lines_of;  // The line each measurement came from.
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    auto fail = [&](const absl::Status& status) {
      return absl::InvalidArgumentError(
          absl::StrCat("codec calibration file '", file, "' line ", number, ": ", status.message()));
    };
    auto members = LineParser(line).Object();
    if (!members.ok()) return fail(members.status());
    absl::StatusOr<CodecMeasurement> measurement = Measurement(*members);
    if (!measurement.ok()) return fail(measurement.status());
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
  for (const CodecMeasurement& measurement : *measurements) {
    throughput.Set(measurement.choice, measurement.bytes_per_second);
  }
  return throughput;
}

}  // namespace oneflow
