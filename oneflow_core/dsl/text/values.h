// Reading the values of the graph text format (graph_text.h): numbers, booleans, quoted
// strings, op attributes and tensor types, each from the exact text the user wrote.
//
// `what` names the value in errors ("'seed'", "attribute 'rate'"); like the scanner,
// these errors carry no line number (ParseGraphText adds it).
#ifndef ONEFLOW_CORE_DSL_TEXT_VALUES_H_
#define ONEFLOW_CORE_DSL_TEXT_VALUES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/op_definition.h"

namespace oneflow {
namespace graph_text {

// A decimal integer: "-3". Nothing else (no spaces, no "+", no "1.0").
absl::StatusOr<int64_t> ParseInt(absl::string_view text, absl::string_view what);
// A non-negative decimal integer up to 2^64 - 1 (seeds are uint64).
absl::StatusOr<uint64_t> ParseUint64(absl::string_view text, absl::string_view what);
// A decimal float, read exactly (std::from_chars): "0.1", "1e-08", "3", "inf", "-nan".
absl::StatusOr<double> ParseDouble(absl::string_view text, absl::string_view what);
// "true" or "false".
absl::StatusOr<bool> ParseBool(absl::string_view text, absl::string_view what);
// A double-quoted string with C escapes (absl::CUnescape): "\"data/a.bin\"".
absl::StatusOr<std::string> ParseQuoted(absl::string_view text, absl::string_view what);

// An op attribute; its type comes from its spelling, as Graph::ToText prints it:
//   3 -> int, 3.0 / 1e-05 / inf -> float, true -> bool, "gelu" -> string, [0, 2] -> ints.
// So a float attribute must be written with a '.' or an exponent: op definitions do not
// declare attribute types, and an int where a float is expected would read as absent.
absl::StatusOr<AttrValue> ParseAttrValue(absl::string_view text, absl::string_view what);

// "f32[8, 3]", "i32[]": a dtype name (dtype.h) directly followed by a shape.
absl::StatusOr<TensorType> ParseTensorType(absl::string_view text, absl::string_view what);

}  // namespace graph_text
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_VALUES_H_
