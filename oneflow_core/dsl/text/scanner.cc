#include "oneflow_core/dsl/text/scanner.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace graph_text {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsWordStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsWordChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

char CloserOf(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

}  // namespace

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         c == '/' || c == '-' || c == ':';
}

bool IsName(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

void LineScanner::SkipSpaces() {
  while (!rest_.empty() && IsSpace(rest_.front())) rest_.remove_prefix(1);
}

bool LineScanner::AtEnd() {
  SkipSpaces();
  return rest_.empty();
}

bool LineScanner::NextIs(char c) {
  SkipSpaces();
  return !rest_.empty() && rest_.front() == c;
}

bool LineScanner::Consume(char c) {
  if (!NextIs(c)) return false;
  rest_.remove_prefix(1);
  return true;
}

absl::Status LineScanner::Expect(char c, absl::string_view after) {
  if (Consume(c)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("expected '", std::string(1, c), "' after ", after, ", got ", Upcoming()));
}

std::string LineScanner::Upcoming() {
  SkipSpaces();
  if (rest_.empty()) return "end of line";
  return absl::StrCat("'", rest_, "'");
}

absl::StatusOr<absl::string_view> LineScanner::Word(absl::string_view what) {
  SkipSpaces();
  size_t length = 0;
  if (!rest_.empty() && IsWordStart(rest_.front())) {
    while (length < rest_.size() && IsWordChar(rest_[length])) ++length;
  }
  if (length == 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", what, ", got ", Upcoming()));
  }
  absl::string_view word = rest_.substr(0, length);
  rest_.remove_prefix(length);
  return word;
}

absl::StatusOr<absl::string_view> LineScanner::Name(absl::string_view what) {
  SkipSpaces();
  size_t length = 0;
  while (length < rest_.size() && IsNameChar(rest_[length])) ++length;
  if (length == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", what, " (letters, digits, _ . / - :), got ", Upcoming()));
  }
  absl::string_view name = rest_.substr(0, length);
  rest_.remove_prefix(length);
  return name;
}

absl::StatusOr<absl::string_view> LineScanner::TensorRef(absl::string_view what) {
  if (!Consume('%')) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", what, " (a tensor like %x), got ", Upcoming()));
  }
  return Name(absl::StrCat("a tensor name after '%' in ", what));
}

absl::StatusOr<absl::string_view> LineScanner::Value(absl::string_view what) {
  SkipSpaces();
  if (rest_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", what, ", got end of line"));
  }
  size_t length = 0;
  if (rest_.front() == '"') {
    // A backslash escapes the next character (absl::CUnescape rules), so \" does not end it.
    length = 1;
    while (length < rest_.size() && rest_[length] != '"') length += rest_[length] == '\\' ? 2 : 1;
    if (length >= rest_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unterminated string in ", what, ": ", Upcoming()));
    }
    ++length;  // The closing quote.
  } else {
    std::string closers;  // Expected closing brackets, innermost last.
    for (; length < rest_.size(); ++length) {
      const char c = rest_[length];
      if (c == '(' || c == '[' || c == '{') {
        closers.push_back(CloserOf(c));
      } else if (c == ')' || c == ']' || c == '}') {
        if (closers.empty() && c == ')') break;  // Ends a call's argument list.
        if (closers.empty() || closers.back() != c) {
          return absl::InvalidArgumentError(absl::StrCat(
              "unbalanced '", std::string(1, c), "' in ", what, ": ", Upcoming()));
        }
        closers.pop_back();
      } else if (closers.empty() && (IsSpace(c) || c == ',')) {
        break;
      }
    }
    if (!closers.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("missing '", std::string(1, closers.back()),
                                                     "' in ", what, ": ", Upcoming()));
    }
    if (length == 0) {
      return absl::InvalidArgumentError(absl::StrCat("expected ", what, ", got ", Upcoming()));
    }
  }
  absl::string_view value = rest_.substr(0, length);
  rest_.remove_prefix(length);
  return value;
}

absl::string_view LineScanner::Rest() {
  absl::string_view rest = absl::StripAsciiWhitespace(rest_);
  rest_ = absl::string_view();
  return rest;
}

absl::Status Fields::Add(absl::string_view key, absl::string_view value, bool allow_duplicate) {
  for (const Field& field : fields_) {
    if (field.key == key && !allow_duplicate) {
      return absl::InvalidArgumentError(absl::StrCat("key '", key, "' is given twice"));
    }
  }
  fields_.push_back(Field{key, value, false});
  return absl::OkStatus();
}

absl::StatusOr<Fields> Fields::ReadSpaced(LineScanner& scanner) {
  Fields fields;
  while (!scanner.AtEnd()) {
    OF_ASSIGN_OR_RETURN(absl::string_view key, scanner.Word("a key=value field"));
    OF_RETURN_IF_ERROR(scanner.Expect('=', absl::StrCat("'", key, "'")));
    OF_ASSIGN_OR_RETURN(absl::string_view value,
                        scanner.Value(absl::StrCat("a value for '", key, "'")));
    OF_RETURN_IF_ERROR(fields.Add(key, value, /*allow_duplicate=*/false));
  }
  return fields;
}

absl::StatusOr<Fields> Fields::ReadCall(LineScanner& scanner) {
  Fields fields;
  if (scanner.Consume(')')) return fields;
  while (true) {
    OF_ASSIGN_OR_RETURN(absl::string_view key, scanner.Word("an argument name"));
    OF_RETURN_IF_ERROR(scanner.Expect('=', absl::StrCat("argument '", key, "'")));
    OF_ASSIGN_OR_RETURN(absl::string_view value,
                        scanner.Value(absl::StrCat("a value for argument '", key, "'")));
    // The caller tells inputs from attributes and reports repeats of either.
    OF_RETURN_IF_ERROR(fields.Add(key, value, /*allow_duplicate=*/true));
    if (scanner.Consume(')')) return fields;
    if (!scanner.Consume(',')) {
      return absl::InvalidArgumentError(absl::StrCat("expected ',' or ')' after argument '", key,
                                                     "', got ", scanner.Upcoming()));
    }
  }
}

std::optional<absl::string_view> Fields::Take(absl::string_view key) {
  for (Field& field : fields_) {
    if (field.key == key && !field.taken) {
      field.taken = true;
      return field.value;
    }
  }
  return std::nullopt;
}

std::optional<absl::string_view> Fields::TakeTensor(absl::string_view key) {
  for (Field& field : fields_) {
    if (field.key == key && !field.taken && absl::StartsWith(field.value, "%")) {
      field.taken = true;
      return field.value;
    }
  }
  return std::nullopt;
}

absl::StatusOr<absl::string_view> Fields::Require(absl::string_view key, absl::string_view owner) {
  std::optional<absl::string_view> value = Take(key);
  if (!value) return absl::InvalidArgumentError(absl::StrCat(owner, " needs '", key, "=...'"));
  return *value;
}

absl::Status Fields::CheckAllTaken(absl::string_view owner, absl::string_view valid) const {
  for (const Field& field : fields_) {
    if (!field.taken) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown key '", field.key, "' for ", owner, "; valid: ", valid));
    }
  }
  return absl::OkStatus();
}

}  // namespace graph_text
}  // namespace oneflow
