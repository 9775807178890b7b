// A small streaming JSON writer for `oneflow inspect --format=json`.
//
// Written by hand rather than printed from a protobuf message because the output's key
// order is part of its contract (keys come out exactly in the order they are written)
// and because int64 byte counts must stay exact integers, which google.protobuf.Struct
// (doubles only) cannot promise. Output is indented by two spaces per level; empty
// containers print as {} and [].
//
//   JsonWriter json;
//   json.BeginObject();
//   json.Key("name");  json.String("mm");
//   json.Key("bytes"); json.Int(4096);
//   json.EndObject();
//   std::string text = json.Finish();  // {"name": "mm", "bytes": 4096} over 4 lines
//
// Misuse (a value where a key is expected, unbalanced Begin/End) is a programmer error,
// caught by assert in debug builds; what is written never depends on user input.
#ifndef TOOLS_CLI_JSON_WRITER_H_
#define TOOLS_CLI_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace oneflow::cli {

class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // The next value is the value of `key`; only inside an object.
  void Key(absl::string_view key);

  // Strings are escaped per RFC 8259 (quotes, backslashes, control characters as \uXXXX);
  // other bytes, UTF-8 included, pass through unchanged.
  void String(absl::string_view value);
  void Int(int64_t value);
  // Non-finite values have no JSON spelling and are written as null.
  void Double(double value);
  void Bool(bool value);
  void Null();

  // The finished document, with a trailing newline.
  std::string Finish();

 private:
  struct Level {
    bool is_object;
    int count;  // values (or key/value pairs) written so far
  };

  // Writes the comma and line break that go before a value or key at the current level.
  void BeforeValue();
  void NewLine(size_t depth);

  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

// `value` as a quoted, escaped JSON string.
std::string JsonQuote(absl::string_view value);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_JSON_WRITER_H_
