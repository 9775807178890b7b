#include "tools/cli/text_wrap.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

TEST(TextWrap, ShortLinesStayAsTheyAre) {
  EXPECT_EQ(WrapLongLines("a: 1\n  b: 2, 3\n\nc\n", 10), "a: 1\n  b: 2, 3\n\nc\n");
  EXPECT_EQ(WrapLongLines("no final newline", 16), "no final newline");
}

TEST(TextWrap, AListBreaksAfterItsCommasUnderTheValue) {
  EXPECT_EQ(WrapLongLines("    order: 0 all_reduce(w), 1 all_gather(h), 2 reduce_scatter(g)\n", 40),
            "    order: 0 all_reduce(w),\n"
            "           1 all_gather(h),\n"
            "           2 reduce_scatter(g)\n");
}

TEST(TextWrap, ProseBreaksAtSpacesAndAWordLongerThanTheLineIsCut) {
  // No ": " in the first half: continuations go 4 spaces deeper than the line.
  EXPECT_EQ(WrapLongLines("  one two three four five six\n", 16), "  one two three\n      four five\n      six\n");
  // The continuation indent is at most half the width, so every piece makes progress.
  EXPECT_EQ(WrapLongLines("abcdefghijkl", 5), "abcde\n  fgh\n  ijk\n  l");
}

// The property inspect relies on: no line over the width, and nothing lost.
TEST(TextWrap, A2800CharacterListJoinsBackToItself) {
  std::vector<std::string> items;
  for (int i = 0; i < 120; ++i) items.push_back(absl::StrCat(i, " reduce_scatter(block", i % 7, "/attn/w_grad)"));
  const std::string line = absl::StrCat("    collective order: ", absl::StrJoin(items, ", "));
  ASSERT_GT(line.size(), 2800u);
  const std::string wrapped = WrapLongLines(line + "\n");
  std::vector<std::string> lines = absl::StrSplit(wrapped, '\n');
  ASSERT_EQ(lines.back(), "");
  lines.pop_back();
  EXPECT_GT(lines.size(), 14u);
  std::string joined = lines[0];
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_LE(lines[i].size(), kMaxTextLineWidth) << lines[i];
    if (i == 0) continue;
    const std::string indent(22, ' ');  // under the value, after "    collective order: "
    ASSERT_EQ(lines[i].substr(0, indent.size()), indent) << lines[i];
    EXPECT_NE(lines[i][indent.size()], ' ') << lines[i];
    EXPECT_EQ(lines[i - 1].back(), ',') << lines[i - 1];
    absl::StrAppend(&joined, " ", lines[i].substr(indent.size()));
  }
  EXPECT_EQ(joined, line);
}

}  // namespace
}  // namespace oneflow::cli
