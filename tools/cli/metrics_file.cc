#include "tools/cli/metrics_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace oneflow::cli {
namespace {

bool IsWordChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// MetricsJsonLine prints a non-finite loss with printf ("nan", "-nan", "inf", "-inf"),
// which is not JSON: quote those words where they stand outside a string so the JSON
// parser takes the line, and Number() below reads them back.
std::string QuoteNonFiniteWords(absl::string_view line) {
  static constexpr absl::string_view kWords[] = {"-nan", "-inf", "nan", "inf"};
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < line.size()) {
        out.push_back(line[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool quoted = false;
    if (i == 0 || !IsWordChar(line[i - 1])) {
      for (absl::string_view word : kWords) {
        const size_t end = i + word.size();
        if (line.substr(i, word.size()) == word && (end == line.size() || !IsWordChar(line[end]))) {
          absl::StrAppend(&out, "\"", word, "\"");
          i = end - 1;
          quoted = true;
          break;
        }
      }
    }
    if (!quoted) out.push_back(c);
  }
  return out;
}

std::optional<double> Number(const google::protobuf::Value& value) {
  if (value.has_number_value()) return value.number_value();
  if (!value.has_string_value()) return std::nullopt;
  const std::string& word = value.string_value();
  if (word == "nan" || word == "-nan") return std::numeric_limits<double>::quiet_NaN();
  if (word == "inf") return std::numeric_limits<double>::infinity();
  if (word == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

// `key` of `object` as a number (an integer when `integer`), or INVALID_ARGUMENT naming it.
absl::StatusOr<double> Field(const google::protobuf::Struct& object, const std::string& key, bool integer,
                             absl::string_view where = "") {
  auto it = object.fields().find(key);
  if (it == object.fields().end()) return absl::InvalidArgumentError(absl::StrCat("no \"", key, "\"", where));
  const std::optional<double> number = Number(it->second);
  if (!number.has_value() || (integer && (!std::isfinite(*number) || *number != std::floor(*number)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\"", where, " is not ", integer ? "an integer" : "a number"));
  }
  return *number;
}

}  // namespace

absl::StatusOr<MetricsLine> ParseMetricsLine(absl::string_view text) {
  google::protobuf::Struct object;
  if (!google::protobuf::util::JsonStringToMessage(QuoteNonFiniteWords(text), &object).ok()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  MetricsLine line;
  absl::StatusOr<double> number = Field(object, "iter", /*integer=*/true);
  if (!number.ok()) return number.status();
  line.iteration = static_cast<int64_t>(*number);
  for (auto [key, field] : {std::pair<const char*, double*>{"loss", &line.loss},
                            {"step_ms", &line.step_ms},
                            {"samples_per_s", &line.samples_per_s}}) {
    number = Field(object, key, /*integer=*/false);
    if (!number.ok()) return number.status();
    *field = *number;
  }
  auto nodes = object.fields().find("node_step_ms");
  if (nodes != object.fields().end()) {
    if (!nodes->second.has_struct_value()) return absl::InvalidArgumentError("\"node_step_ms\" is not an object");
    for (const auto& [node, value] : nodes->second.struct_value().fields()) {
      int64_t rank = 0;
      const std::optional<double> step_ms = Number(value);
      if (!absl::SimpleAtoi(node, &rank) || rank < 0 || !step_ms.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"node_step_ms\" entry \"", node, "\" is not a node rank with a number"));
      }
      line.node_step_ms[rank] = *step_ms;
    }
  }
  auto compression = object.fields().find("compression");
  if (compression == object.fields().end()) return line;
  if (!compression->second.has_struct_value()) return absl::InvalidArgumentError("\"compression\" is not an object");
  for (const auto& [codec, value] : compression->second.struct_value().fields()) {
    const std::string where = absl::StrCat(" of codec \"", codec, "\"");
    if (!value.has_struct_value()) return absl::InvalidArgumentError(absl::StrCat("codec \"", codec, "\" is not an object"));
    const google::protobuf::Struct& entry = value.struct_value();
    CodecLine& codec_line = line.compression[codec];
    auto rel_l2 = entry.fields().find("rel_l2");
    if (rel_l2 != entry.fields().end() && rel_l2->second.has_null_value()) {
      codec_line.rel_l2 = std::numeric_limits<double>::quiet_NaN();
    } else {
      number = Field(entry, "rel_l2", /*integer=*/false, where);
      if (!number.ok()) return number.status();
      codec_line.rel_l2 = *number;
    }
    number = Field(entry, "wire_bytes", /*integer=*/true, where);
    if (!number.ok()) return number.status();
    codec_line.wire_bytes = static_cast<int64_t>(*number);
    number = Field(entry, "dense_bytes", /*integer=*/true, where);
    if (!number.ok()) return number.status();
    codec_line.dense_bytes = static_cast<int64_t>(*number);
  }
  return line;
}

absl::StatusOr<std::vector<MetricsLine>> ReadMetricsFile(const std::string& path) {
  const std::string prefix = absl::StrCat("metrics file '", path, "'");
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    const std::string message = absl::StrCat(prefix, ": cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message)
                           : error == EACCES ? absl::PermissionDeniedError(message)
                                             : absl::InvalidArgumentError(message);
  }
  std::vector<MetricsLine> lines;
  std::string text;
  for (int64_t number = 1; std::getline(file, text); ++number) {
    if (absl::StripAsciiWhitespace(text).empty()) continue;
    absl::StatusOr<MetricsLine> line = ParseMetricsLine(text);
    if (!line.ok()) {
      // Enough of the line to recognize it, not a whole stray log.
      constexpr size_t kShown = 60;
      return absl::InvalidArgumentError(absl::StrCat(
          prefix, ": line ", number, " is not a metrics line of `oneflow run --metrics` (", line.status().message(),
          "): ", text.size() > kShown ? absl::StrCat(text.substr(0, kShown), "...") : text));
    }
    lines.push_back(*std::move(line));
  }
  if (file.bad()) return absl::DataLossError(absl::StrCat(prefix, ": read error: ", std::strerror(errno)));
  if (lines.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, ": the file is empty (no metrics lines); write one with `oneflow run PLAN --metrics=FILE`"));
  }
  return lines;
}

}  // namespace oneflow::cli
