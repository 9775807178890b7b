// Plan files: round trips, byte-identical writes, atomic replacement, and the exact
// message for every kind of bad file a user may hand `oneflow inspect`.
#include "tools/cli/plan_io.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tools/cli/sample_plan.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;

// A fresh directory per test under Bazel's TEST_TMPDIR (or /tmp when run by hand).
std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/plan_io_XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> ListDirectory(const std::string& directory) {
  std::vector<std::string> names;
  DIR* dir = opendir(directory.c_str());
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  return names;
}

// The message ReadPlanFile gives for `bytes` written to a file.
std::string MessageFor(const std::string& bytes, const std::string& path) {
  WriteBytes(path, bytes);
  absl::StatusOr<proto::Plan> plan = ReadPlanFile(path);
  EXPECT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(plan.status().message());
}

TEST(PlanIoTest, WrittenPlanReadsBackEqual) {
  const std::string path = TempDir() + "/a.plan";
  const proto::Plan plan = SampleDataParallelPlan();
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(plan, *read));
}

TEST(PlanIoTest, SamePlanWrittenTwiceIsByteIdentical) {
  const std::string directory = TempDir();
  ASSERT_TRUE(WritePlanFile(directory + "/first.plan", SampleDataParallelPlan()).ok());
  ASSERT_TRUE(WritePlanFile(directory + "/second.plan", SampleDataParallelPlan()).ok());
  const std::string first = ReadBytes(directory + "/first.plan");
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, ReadBytes(directory + "/second.plan"));
  EXPECT_EQ(first, SerializePlan(SampleDataParallelPlan()).value());
}

TEST(PlanIoTest, MapInsertionOrderDoesNotChangeTheBytes) {
  // Maps serialize in hash order unless deterministic; this is what that rules out.
  proto::Plan forward = SampleDataParallelPlan();
  proto::Plan backward = SampleDataParallelPlan();
  auto* forward_attrs = forward.mutable_job()->mutable_ops(0)->mutable_attrs();
  auto* backward_attrs = backward.mutable_job()->mutable_ops(0)->mutable_attrs();
  for (int i = 0; i < 64; ++i) (*forward_attrs)["k" + std::to_string(i)].set_i(i);
  for (int i = 63; i >= 0; --i) (*backward_attrs)["k" + std::to_string(i)].set_i(i);
  EXPECT_EQ(SerializePlan(forward).value(), SerializePlan(backward).value());
}

TEST(PlanIoTest, OverwriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string directory = TempDir();
  const std::string path = directory + "/a.plan";
  WriteBytes(path, "an older, longer file that must be replaced whole");
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_job()->set_name("replaced");
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).value().job().name(), "replaced");
  EXPECT_THAT(ListDirectory(directory), ::testing::ElementsAre("a.plan"));
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644);
}

TEST(PlanIoTest, WriteIntoMissingDirectoryNamesTheFileAndDirectory) {
  const std::string directory = TempDir() + "/missing";
  const absl::Status status = WritePlanFile(directory + "/a.plan", SampleDataParallelPlan());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "plan file '" + directory +
                                  "/a.plan': cannot create a temporary file in '" + directory +
                                  "': No such file or directory");
}

TEST(PlanIoTest, MissingFile) {
  const std::string path = TempDir() + "/nothing.plan";
  const absl::StatusOr<proto::Plan> plan = ReadPlanFile(path);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(plan.status().message(),
            "plan file '" + path + "': cannot open: No such file or directory");
}

TEST(PlanIoTest, DirectoryInsteadOfFile) {
  const std::string path = TempDir();
  EXPECT_EQ(ReadPlanFile(path).status().message(), "plan file '" + path + "': is a directory");
}

TEST(PlanIoTest, UnreadableFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const std::string path = TempDir() + "/secret.plan";
  ASSERT_TRUE(WritePlanFile(path, SampleDataParallelPlan()).ok());
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  const absl::StatusOr<proto::Plan> plan = ReadPlanFile(path);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(plan.status().message(), "plan file '" + path + "': cannot open: Permission denied");
}

TEST(PlanIoTest, EmptyFile) {
  const std::string path = TempDir() + "/empty.plan";
  EXPECT_EQ(MessageFor("", path), "plan file '" + path + "': the file is empty");
}

TEST(PlanIoTest, TruncatedFile) {
  const std::string path = TempDir() + "/truncated.plan";
  const std::string bytes = SerializePlan(SampleDataParallelPlan()).value();
  // Cut inside the devices: their length prefix promises more bytes than remain.
  EXPECT_EQ(MessageFor(bytes.substr(0, bytes.size() - 100), path),
            "plan file '" + path +
                "': does not parse as a plan (truncated, damaged, or not a plan file)");
}

TEST(PlanIoTest, RandomBytes) {
  const std::string path = TempDir() + "/random.plan";
  std::mt19937 generator(2024);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(generator() & 0xFF);
  EXPECT_EQ(MessageFor(bytes, path),
            "plan file '" + path +
                "': does not parse as a plan (truncated, damaged, or not a plan file)");
}

TEST(PlanIoTest, JpegFile) {
  const std::string path = TempDir() + "/photo.jpg";
  const std::string jpeg("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01", 16);
  EXPECT_EQ(MessageFor(jpeg, path),
            "plan file '" + path +
                "': does not parse as a plan (truncated, damaged, or not a plan file)");
}

TEST(PlanIoTest, TextThatParsesAsAnEmptyMessageIsRefusedByItsVersion) {
  // "0" is field 6 with varint wire type, "1" its value: protobuf accepts this as an
  // unknown field, so only the missing format_version gives the text file away.
  const std::string path = TempDir() + "/notes.txt";
  EXPECT_EQ(MessageFor("0101", path),
            "plan file '" + path +
                "': format_version is 0 (unset): not a plan, or a damaged one; this build "
                "reads version 1");
}

TEST(PlanIoTest, WrongFormatVersion) {
  const std::string path = TempDir() + "/future.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.set_format_version(7);
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            "plan file '" + path + "': format_version is 7, but this build reads only version 1");
}

TEST(PlanIoTest, DanglingRegisterId) {
  const std::string path = TempDir() + "/dangling.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(2)->add_consumed_registers(9);
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            "plan file '" + path +
                "': inconsistent plan: device 0 (0:0) actor 2 'mm' consumes register 9, which "
                "device 0 does not define");
}

}  // namespace
}  // namespace oneflow::cli
