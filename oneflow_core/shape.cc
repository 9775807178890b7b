#include "oneflow_core/shape.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace oneflow {

absl::StatusOr<Shape> Shape::FromDims(std::vector<int64_t> dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(dims, ", "), "] has negative dimension ",
                       dims[i], " at axis ", i, "; dimensions must be >= 0"));
    }
  }
  return Shape(std::move(dims));
}

absl::StatusOr<Shape> Shape::Parse(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&body, "[") || !absl::ConsumeSuffix(&body, "]")) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot parse shape '", text, "': expected a list like [2, 3] or []"));
  }
  std::vector<int64_t> dims;
  if (!absl::StripAsciiWhitespace(body).empty()) {
    for (absl::string_view item : absl::StrSplit(body, ',')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot parse shape '", text, "': '",
                         absl::StripAsciiWhitespace(item), "' is not an integer"));
      }
      dims.push_back(value);
    }
  }
  return FromDims(std::move(dims));
}

int64_t Shape::NumElements() const {
  int64_t count = 1;
  for (int64_t d : dims_) count *= d;
  return count;
}

std::vector<int64_t> Shape::Strides() const {
  std::vector<int64_t> strides(dims_.size(), 1);
  for (int64_t axis = rank() - 2; axis >= 0; --axis) {
    strides[axis] = strides[axis + 1] * dims_[axis + 1];
  }
  return strides;
}

std::string Shape::ToString() const { return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]"); }

}  // namespace oneflow
