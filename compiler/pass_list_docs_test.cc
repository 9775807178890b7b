// The pass list lives in one place, standard_pipeline.cc. docs/overview.md and
// docs/compiler.md keep a table of the passes (what each reads, writes and does); this
// test holds each table to the pipeline, so adding, removing or reordering a pass fails
// here until the docs say so too.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/match.h"
#include "compiler/pass_pipeline.h"
#include "compiler/standard_pipeline.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The pass names of the table whose header starts with "| # | pass", in row order: the
// first `name` in backquotes of each row's second column.
std::vector<std::string> PassTable(const std::string& page) {
  std::vector<std::string> names;
  bool in_table = false;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, "| # | pass")) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (!absl::StartsWith(line, "|")) break;
    const std::vector<absl::string_view> columns = absl::StrSplit(line, '|');
    if (columns.size() < 3 || absl::StartsWith(columns[1], "---")) continue;
    const absl::string_view column = columns[2];
    const size_t open = column.find('`');
    const size_t close = open == absl::string_view::npos ? open : column.find('`', open + 1);
    if (close == absl::string_view::npos) {
      names.push_back(std::string(column));  // a row without a pass name: shows in the diff
      continue;
    }
    names.push_back(std::string(column.substr(open + 1, close - open - 1)));
  }
  return names;
}

TEST(PassListDocsTest, OverviewTableIsTheStandardPipeline) {
  const std::string page = ReadFile("docs/overview.md");
  ASSERT_FALSE(page.empty()) << "docs/overview.md not in the test's runfiles";
  EXPECT_EQ(absl::StrJoin(PassTable(page), ", "), absl::StrJoin(StandardPipeline().PassNames(), ", "));
}

TEST(PassListDocsTest, CompilerTableIsTheStandardPipeline) {
  const std::string page = ReadFile("docs/compiler.md");
  ASSERT_FALSE(page.empty()) << "docs/compiler.md not in the test's runfiles";
  EXPECT_EQ(absl::StrJoin(PassTable(page), ", "), absl::StrJoin(StandardPipeline().PassNames(), ", "));
}

}  // namespace
}  // namespace oneflow
