#include "tools/cli/json_writer.h"

#include <cassert>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::cli {

std::string JsonQuote(absl::string_view value) {
  std::string quoted = "\"";
  for (const char c : value) {
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\t':
        quoted += "\\t";
        break;
      case '\r':
        quoted += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&quoted, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          quoted += c;
        }
    }
  }
  quoted += '"';
  return quoted;
}

void JsonWriter::NewLine(size_t depth) {
  out_ += '\n';
  out_.append(2 * depth, ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  assert(!levels_.back().is_object && "a value inside an object needs a Key first");
  if (levels_.back().count++ > 0) out_ += ',';
  NewLine(levels_.size());
}

void JsonWriter::Key(absl::string_view key) {
  assert(!levels_.empty() && levels_.back().is_object && !after_key_);
  if (levels_.back().count++ > 0) out_ += ',';
  NewLine(levels_.size());
  absl::StrAppend(&out_, JsonQuote(key), ": ");
  after_key_ = true;
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  levels_.push_back({/*is_object=*/true, 0});
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  levels_.push_back({/*is_object=*/false, 0});
}

void JsonWriter::EndObject() {
  assert(!levels_.empty() && levels_.back().is_object && !after_key_);
  const bool empty = levels_.back().count == 0;
  levels_.pop_back();
  if (!empty) NewLine(levels_.size());
  out_ += '}';
}

void JsonWriter::EndArray() {
  assert(!levels_.empty() && !levels_.back().is_object);
  const bool empty = levels_.back().count == 0;
  levels_.pop_back();
  if (!empty) NewLine(levels_.size());
  out_ += ']';
}

void JsonWriter::String(absl::string_view value) {
  BeforeValue();
  out_ += JsonQuote(value);
}

void JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
}

void JsonWriter::Double(double value) {
  BeforeValue();
  // %.17g round-trips every double, %g keeps common values short ("12.5", "1.2").
  if (!std::isfinite(value)) {
    out_ += "null";
  } else if (std::string shortest = absl::StrFormat("%g", value); std::stod(shortest) == value) {
    out_ += shortest;
  } else {
    absl::StrAppendFormat(&out_, "%.17g", value);
  }
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

std::string JsonWriter::Finish() {
  assert(levels_.empty() && !after_key_);
  out_ += '\n';
  return std::move(out_);
}

}  // namespace oneflow::cli
