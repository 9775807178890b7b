// Golden-file comparison for text-out tests: the expected text lives in a file under
// testdata/; a mismatch reports the first differing line. To regenerate after an
// intended change, run the test with ONEFLOW_UPDATE_GOLDEN set to the source directory
// of the golden files, e.g.
//   ONEFLOW_UPDATE_GOLDEN=$PWD/tests/testdata/golden bazel-bin/tests/compiler_golden_test
// and review the diff like any code change.
#ifndef TESTS_GOLDEN_H_
#define TESTS_GOLDEN_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace oneflow::testing {

// `runfile` is relative to the workspace, e.g. "tests/testdata/golden/mlp_dp.txt".
inline ::testing::AssertionResult MatchesGolden(const std::string& actual, const std::string& runfile) {
  const char* update = std::getenv("ONEFLOW_UPDATE_GOLDEN");
  const std::string name = runfile.substr(runfile.rfind('/') + 1);
  if (update != nullptr) {
    std::ofstream(absl::StrCat(update, "/", name)) << actual;
    return ::testing::AssertionSuccess();
  }
  std::ifstream file(runfile);
  if (!file) return ::testing::AssertionFailure() << "cannot read golden file " << runfile;
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string expected = buffer.str();
  if (expected == actual) return ::testing::AssertionSuccess();
  const std::vector<std::string> want = absl::StrSplit(expected, '\n');
  const std::vector<std::string> have = absl::StrSplit(actual, '\n');
  size_t line = 0;
  while (line < want.size() && line < have.size() && want[line] == have[line]) ++line;
  return ::testing::AssertionFailure()
         << runfile << " differs at line " << line + 1 << ":\n  expected: "
         << (line < want.size() ? want[line] : "<end of file>")
         << "\n  actual:   " << (line < have.size() ? have[line] : "<end of output>")
         << "\n(" << want.size() << " expected lines, " << have.size() << " actual)";
}

}  // namespace oneflow::testing

#endif  // TESTS_GOLDEN_H_
