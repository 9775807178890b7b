// Token files and the token comparison (auth.h); the per-method refusals are tested on
// real servers in rendezvous_test.cc and oneflowd_test.cc.
#include "tools/launcher/auth.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& contents, mode_t mode) {
  const std::string path = testing::TestDirectory("auth") + "/token";
  std::ofstream(path) << contents;
  chmod(path.c_str(), mode);
  return path;
}

TEST(ReadTokenFileTest, TrimsWhitespace) {
  absl::StatusOr<std::string> token = ReadTokenFile(WriteFile("  s3cret-token\n\n", 0600));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cret-token");
}

TEST(ReadTokenFileTest, MissingFileIsNotFoundNamingIt) {
  absl::StatusOr<std::string> token = ReadTokenFile("/nonexistent/dir/token");
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(token.status().message(), HasSubstr("token file '/nonexistent/dir/token'"));
  EXPECT_THAT(token.status().message(), HasSubstr("No such file"));
}

TEST(ReadTokenFileTest, EmptyFileIsRefused) {
  const std::string path = WriteFile(" \n", 0600);
  absl::StatusOr<std::string> token = ReadTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("'" + path + "' is empty"));
}

TEST(ReadTokenFileTest, WorldReadableFileIsRefused) {
  absl::StatusOr<std::string> token = ReadTokenFile(WriteFile("secret", 0644));
  EXPECT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(token.status().message(), HasSubstr("mode 0644"));
  EXPECT_THAT(token.status().message(), HasSubstr("chmod 600"));
}

TEST(ReadTokenFileTest, NonPrintableTokenIsRefused) {
  absl::StatusOr<std::string> token = ReadTokenFile(WriteFile(std::string("ab\x01" "cd"), 0600));
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("byte 2 of the token is not printable ASCII"));
}

TEST(ReadTokenFileTest, NoPathNamesTheFlag) {
  EXPECT_THAT(ReadTokenFile("").status().message(), HasSubstr("--token_file"));
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abd"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer ab"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abcd"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", ""));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace oneflow::launcher
