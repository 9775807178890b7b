// One flat JSON object per line: the shape of calibration files (sbp/codec_throughput.h,
// sbp/calibration.h). Values are strings, numbers (kept as written) or booleans; no
// nesting, no escapes beyond \" and \\. Errors say the column: "column 12: expected ':'
// after key \"codec\"".
#ifndef SBP_JSON_LINE_H_
#define SBP_JSON_LINE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oneflow {

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

}  // namespace oneflow

#endif  // SBP_JSON_LINE_H_
