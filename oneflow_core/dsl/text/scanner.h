// The lexical layer of the graph text format (graph_text.h): a cursor over one line that
// reads words, %names and values, and the key=value fields of a statement.
//
// Errors here carry no line number: ParseGraphText puts "line N: " in front of every
// error, so each piece reports only what it saw and quotes the text the user wrote.
#ifndef ONEFLOW_CORE_DSL_TEXT_SCANNER_H_
#define ONEFLOW_CORE_DSL_TEXT_SCANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {
namespace graph_text {

// True for the characters of tensor and data source names: letters, digits and _ . / - :
// ('/' because name scopes and multi-output ops name tensors "op/arg").
bool IsNameChar(char c);
// True when `text` is a non-empty run of IsNameChar characters.
bool IsName(absl::string_view text);

class LineScanner {
 public:
  explicit LineScanner(absl::string_view line) : rest_(line) {}

  // True when only spaces remain.
  bool AtEnd();
  // True when the next character (after spaces) is `c`; consumes nothing.
  bool NextIs(char c);
  // Consumes `c` (after spaces) when it is next.
  bool Consume(char c);
  // Consumes `c` or fails: "expected '=' after %x, got 'input f32[4]'".
  absl::Status Expect(char c, absl::string_view after);

  // An identifier [A-Za-z_][A-Za-z0-9_]*: a keyword, an op type, a key. `what` names
  // the expected thing in the error: "expected an op type, got '(a=%x)'".
  absl::StatusOr<absl::string_view> Word(absl::string_view what);
  // A name (IsName) of a tensor or data source.
  absl::StatusOr<absl::string_view> Name(absl::string_view what);
  // "%name"; returns the name without '%'.
  absl::StatusOr<absl::string_view> TensorRef(absl::string_view what);
  // One value as written: a quoted string (quotes included), or the text up to a space,
  // ',' or ')' outside brackets, so "[S(0), B]", "f32[8, 3]" and "S(0)" are one value.
  absl::StatusOr<absl::string_view> Value(absl::string_view what);
  // The rest of the line with surrounding spaces removed; consumes it.
  absl::string_view Rest();

  // What comes next, for error messages: "'loss %x'" or "end of line".
  std::string Upcoming();

 private:
  void SkipSpaces();

  absl::string_view rest_;
};

// The key=value fields of one statement. Each construct takes the keys it knows and then
// calls CheckAllTaken, so a misspelt key is reported with the valid ones.
class Fields {
 public:
  // Fields separated by spaces, up to the end of the line:  seed=1 num_classes=10
  static absl::StatusOr<Fields> ReadSpaced(LineScanner& scanner);
  // Call arguments after an opening '(' up to and including ')':  a=%x, transpose_a=true)
  // A key may appear twice here, as an input and as an attribute, because op definitions
  // may use one name for both (sgd_update's momentum tensor and momentum factor).
  static absl::StatusOr<Fields> ReadCall(LineScanner& scanner);

  // The value of the first field not yet taken with `key`, marking it taken; nullopt
  // when there is none.
  std::optional<absl::string_view> Take(absl::string_view key);
  // As Take, but only a field whose value is a tensor reference ("%x").
  std::optional<absl::string_view> TakeTensor(absl::string_view key);
  // As Take, but absence is an error: "variable %w needs 'init=...'".
  absl::StatusOr<absl::string_view> Require(absl::string_view key, absl::string_view owner);
  // Fails on the first field not taken:
  //   "unknown key 'sead' for variable %w; valid: init, seed, trainable, sbp, placement, compression"
  absl::Status CheckAllTaken(absl::string_view owner, absl::string_view valid) const;

  struct Field {
    absl::string_view key;
    absl::string_view value;
    bool taken = false;
  };
  std::vector<Field>& fields() { return fields_; }

 private:
  // Fails if `key` is present and duplicates are not allowed.
  absl::Status Add(absl::string_view key, absl::string_view value, bool allow_duplicate);

  std::vector<Field> fields_;
};

}  // namespace graph_text
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_SCANNER_H_
