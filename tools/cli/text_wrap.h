// Keeping `oneflow inspect`'s text readable: no line longer than kMaxTextLineWidth.
// A 2-block gpt's collective order is one 2,800-character line per device, and a
// cost-model decision over 270; a terminal or an editor shows neither whole.
#ifndef TOOLS_CLI_TEXT_WRAP_H_
#define TOOLS_CLI_TEXT_WRAP_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace oneflow::cli {

inline constexpr size_t kMaxTextLineWidth = 200;

// Every line of `text` longer than `width` characters split into lines of at most
// `width`: after the last ", " that fits (a list breaks between its items), else after
// the last space, else (one word longer than the line) at `width`. Continuation lines
// start under the value of a "key: value" line (the column after the first ": "
// within the first half of the line), or 4 spaces deeper than the line otherwise.
// Where the break is at ", " or a space, joining a line with its continuation (the
// continuation's indent replaced by the one space the break took) gives back the
// original line. Shorter lines are kept as they are; a final newline is kept.
std::string WrapLongLines(absl::string_view text, size_t width = kMaxTextLineWidth);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_TEXT_WRAP_H_
