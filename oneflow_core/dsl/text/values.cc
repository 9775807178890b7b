#include "oneflow_core/dsl/text/values.h"

#include <charconv>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/shape.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace graph_text {
namespace {

// std::from_chars over the whole text; false if anything is left over or out of range.
template <typename T>
bool FromChars(absl::string_view text, T* value) {
  const char* end = text.data() + text.size();
  const std::from_chars_result result = std::from_chars(text.data(), end, *value);
  return result.ec == std::errc() && result.ptr == end && !text.empty();
}

constexpr absl::string_view kAttrForms =
    "valid: an integer (3), a float (0.5, 2.0, 1e-05), true, false, a quoted string "
    "(\"gelu\") or an integer list ([0, 2])";

}  // namespace

absl::StatusOr<int64_t> ParseInt(absl::string_view text, absl::string_view what) {
  int64_t value = 0;
  if (!FromChars(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an integer, got '", text, "'"));
  }
  return value;
}

absl::StatusOr<uint64_t> ParseUint64(absl::string_view text, absl::string_view what) {
  uint64_t value = 0;
  // from_chars for unsigned types accepts no sign, so "-1" fails here as it should.
  if (!FromChars(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be an integer in [0, 18446744073709551615], got '", text, "'"));
  }
  return value;
}

absl::StatusOr<double> ParseDouble(absl::string_view text, absl::string_view what) {
  double value = 0;
  if (!FromChars(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a number (0.1, 1e-08), got '", text, "'"));
  }
  return value;
}

absl::StatusOr<bool> ParseBool(absl::string_view text, absl::string_view what) {
  if (text == "true") return true;
  if (text == "false") return false;
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be true or false, got '", text, "'"));
}

absl::StatusOr<std::string> ParseQuoted(absl::string_view text, absl::string_view what) {
  absl::string_view body = text;
  if (body.size() < 2 || !absl::ConsumePrefix(&body, "\"") || !absl::ConsumeSuffix(&body, "\"")) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be a quoted string (\"...\"), got '", text, "'"));
  }
  std::string value;
  std::string error;
  if (!absl::CUnescape(body, &value, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", text, "': ", error));
  }
  return value;
}

absl::StatusOr<AttrValue> ParseAttrValue(absl::string_view text, absl::string_view what) {
  if (absl::StartsWith(text, "\"")) {
    OF_ASSIGN_OR_RETURN(std::string value, ParseQuoted(text, what));
    return AttrValue(std::move(value));
  }
  if (text == "true" || text == "false") return AttrValue(text == "true");
  absl::string_view body = text;
  if (absl::ConsumePrefix(&body, "[")) {
    if (!absl::ConsumeSuffix(&body, "]")) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", text, "' has no closing ']'; ", kAttrForms));
    }
    std::vector<int64_t> values;
    if (!absl::StripAsciiWhitespace(body).empty()) {
      for (absl::string_view item : absl::StrSplit(body, ',')) {
        int64_t value = 0;
        if (!FromChars(absl::StripAsciiWhitespace(item), &value)) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, " '", text, "': '", absl::StripAsciiWhitespace(item),
                           "' is not an integer; a list holds integers, e.g. [0, 2]"));
        }
        values.push_back(value);
      }
    }
    return AttrValue(std::move(values));
  }
  // A '.', an exponent, or inf/nan (both contain an 'n') make it a float.
  if (text.find_first_of(".eEn") != absl::string_view::npos) {
    double value = 0;
    if (FromChars(text, &value)) return AttrValue(value);
  } else {
    int64_t value = 0;
    if (FromChars(text, &value)) return AttrValue(value);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " cannot be read from '", text, "'; ", kAttrForms));
}

absl::StatusOr<TensorType> ParseTensorType(absl::string_view text, absl::string_view what) {
  const size_t bracket = text.find('[');
  if (bracket == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", text, "' has no shape; write e.g. f32[8, 3] (f32[] for a scalar)"));
  }
  absl::StatusOr<DType> dtype = ParseDType(text.substr(0, bracket));
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", text, "': ", dtype.status().message()));
  }
  absl::StatusOr<Shape> shape = Shape::Parse(text.substr(bracket));
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", text, "': ", shape.status().message()));
  }
  return TensorType{*std::move(shape), *dtype};
}

}  // namespace graph_text
}  // namespace oneflow
