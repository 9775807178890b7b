#include "tools/cli/text_wrap.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace oneflow::cli {
namespace {

// The column continuation lines of `line` start at.
size_t ContinuationIndent(absl::string_view line, size_t width) {
  const size_t indent = std::min(line.find_first_not_of(' '), line.size());
  const size_t colon = line.find(": ", indent);
  if (colon != absl::string_view::npos && colon + 2 <= width / 2) return colon + 2;
  return std::min(indent + 4, width / 2);
}

void AppendWrapped(absl::string_view line, size_t width, std::string* out) {
  const size_t indent = ContinuationIndent(line, width);
  const std::string padding(indent, ' ');
  std::string rest(line);
  bool first = true;
  while (rest.size() > width) {
    // Break points lie past the continuation's indent, so each piece makes progress.
    const size_t floor = first ? std::min(rest.find_first_not_of(' '), rest.size()) : indent;
    size_t cut = absl::string_view::npos;  // `rest` keeps [0, cut); the next piece starts at cut + 1.
    const size_t comma = rest.rfind(", ", width - 1);
    if (comma != std::string::npos && comma + 1 > floor) {
      cut = comma + 1;
    } else {
      const size_t space = rest.rfind(' ', width);
      if (space != std::string::npos && space > floor) cut = space;
    }
    std::string next;
    if (cut == absl::string_view::npos) {
      // One word longer than the line: cut it; joining adds no space here.
      absl::StrAppend(out, rest.substr(0, width), "\n");
      next = absl::StrCat(padding, rest.substr(width));
    } else {
      absl::StrAppend(out, rest.substr(0, cut), "\n");
      next = absl::StrCat(padding, rest.substr(cut + 1));
    }
    rest = std::move(next);
    first = false;
  }
  absl::StrAppend(out, rest, "\n");
}

}  // namespace

std::string WrapLongLines(absl::string_view text, size_t width) {
  std::string out;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  // StrSplit gives an empty last piece for a text ending in a newline.
  const bool final_newline = !lines.empty() && lines.back().empty();
  if (final_newline) lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].size() <= width) {
      absl::StrAppend(&out, lines[i], "\n");
    } else {
      AppendWrapped(lines[i], width, &out);
    }
  }
  if (!final_newline && !out.empty()) out.pop_back();
  return out;
}

}  // namespace oneflow::cli
