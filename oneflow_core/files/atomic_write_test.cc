#include "oneflow_core/files/atomic_write.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::string NewDirectory() {
  std::string directory = absl::StrCat(testing::TempDir(), "/atomic_write.XXXXXX");
  EXPECT_NE(mkdtemp(directory.data()), nullptr);
  return directory;
}

std::vector<std::string> List(const std::string& directory) {
  std::vector<std::string> names;
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  return names;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(WriteFileAtomicallyTest, WritesReplacesAndSetsTheMode) {
  const std::string directory = NewDirectory();
  const std::string path = directory + "/a.bin";
  ASSERT_TRUE(WriteFileAtomically(path, std::string("first\0bytes", 11)).ok());
  EXPECT_EQ(Contents(path), std::string("first\0bytes", 11));
  ASSERT_TRUE(WriteFileAtomically(path, "second", WriteFileOptions{"x", 0600}).ok());
  EXPECT_EQ(Contents(path), "second");
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
  EXPECT_THAT(List(directory), testing::ElementsAre("a.bin"));  // No temporary left behind.
}

TEST(WriteFileAtomicallyTest, MissingDirectoryNamesTheFileAndTheDirectory) {
  const std::string directory = NewDirectory() + "/missing";
  const absl::Status status = WriteFileAtomically(directory + "/a.plan", "x", WriteFileOptions{"plan file '" + directory + "/a.plan'"});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), absl::StrCat("plan file '", directory, "/a.plan': cannot create a temporary file in '",
                                           directory, "': No such file or directory"));
}

// A write that fails half way (the file size limit stops it after 4 KiB of 64) leaves the
// old file whole and no temporary file. The limit holds for root too, unlike a read-only
// directory.
TEST(WriteFileAtomicallyTest, AWriteThatFailsHalfWayLeavesTheOldFile) {
  const std::string directory = NewDirectory();
  const std::string path = directory + "/a.bin";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents").ok());
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing the test.
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status status = WriteFileAtomically(path, std::string(64 << 10, 'n'));
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, SIG_DFL);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr(absl::StrCat("file '", path, "': cannot write '", path,
                                                                            ".tmp.")));
  EXPECT_THAT(std::string(status.message()), testing::EndsWith("File too large"));
  EXPECT_EQ(Contents(path), "old contents");
  EXPECT_THAT(List(directory), testing::ElementsAre("a.bin"));
}

// The rename fails (a directory is in the way): the temporary file is removed.
TEST(WriteFileAtomicallyTest, AFailedRenameLeavesNoTemporary) {
  const std::string directory = NewDirectory();
  const std::string path = directory + "/taken";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  const absl::Status status = WriteFileAtomically(path, "bytes");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("cannot rename into place"));
  EXPECT_THAT(List(directory), testing::ElementsAre("taken"));
  EXPECT_TRUE(List(path).empty());
}

}  // namespace
}  // namespace oneflow
