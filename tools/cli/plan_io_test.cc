// Plan files: round trips, byte-identical writes, atomic replacement, and the exact
// message for every kind of bad file a user may hand `oneflow inspect`.
#include "plan/plan_io.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
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
  ASSERT_TRUE(SealPlan(&plan).ok());  // an edited plan is resealed, as the compiler would
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->job().name(), "replaced");
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
                "reads version 2");
}

TEST(PlanIoTest, WrongFormatVersion) {
  const std::string path = TempDir() + "/future.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.set_format_version(7);
  ASSERT_TRUE(SealPlan(&plan).ok());  // the version, not the checksum, is what is wrong
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            "plan file '" + path + "': format_version is 7, but this build reads only version 2");
}

TEST(PlanIoTest, VersionOnePlanIsRefusedByItsVersion) {
  // A plan written before the checksum existed (version 1, no checksum field).
  const std::string path = TempDir() + "/old.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.set_format_version(1);
  plan.clear_checksum();
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            "plan file '" + path + "': format_version is 1, but this build reads only version 2");
}

TEST(PlanIoTest, DanglingRegisterId) {
  const std::string path = TempDir() + "/dangling.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(2)->add_consumed_registers(9);
  ASSERT_TRUE(SealPlan(&plan).ok());  // the dangling id is the only fault
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            "plan file '" + path +
                "': inconsistent plan: device 0 (0:0) actor 2 'mm' consumes register 9, which "
                "device 0 does not define");
}

// CRC-32 with zlib directly, independently of plan/plan_checksum.cc.
uint32_t Crc32(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

std::string ChecksumMessage(const std::string& path, uint32_t stored, uint32_t contents) {
  return absl::StrFormat(
      "plan file '%s': refused by the plan verifier: plan checksum 0x%08x does not match its "
      "contents (0x%08x): the plan was damaged or edited after it was compiled",
      path, stored, contents);
}

TEST(PlanIoTest, SampleFileEndsWithItsChecksumOverTheRest) {
  // Deterministic serialization writes fields in number order, so the checksum (field 10,
  // fixed32: tag 0x55 and 4 little-endian bytes) comes last, after exactly the bytes of
  // the unsealed plan it is the CRC-32 of.
  const std::string bytes = SerializePlan(SampleDataParallelPlan()).value();
  ASSERT_GT(bytes.size(), 5u);
  EXPECT_EQ(bytes[bytes.size() - 5], '\x55');
  uint32_t stored = 0;
  for (size_t i = bytes.size(); i > bytes.size() - 4; --i) {
    stored = stored << 8 | static_cast<uint8_t>(bytes[i - 1]);
  }
  EXPECT_EQ(stored, SampleDataParallelPlan().checksum());
  EXPECT_EQ(stored, Crc32(bytes.substr(0, bytes.size() - 5)));
}

TEST(PlanIoTest, FileDamagedAfterWritingIsRefusedByItsChecksum) {
  const std::string path = TempDir() + "/damaged.plan";
  const proto::Plan sample = SampleDataParallelPlan();
  ASSERT_TRUE(WritePlanFile(path, sample).ok());
  std::string bytes = ReadBytes(path);
  // Flip one bit inside a tensor name: the first "y_grad" becomes "y_grae" ('d' ^ 1).
  const size_t at = bytes.find("y_grad");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] = static_cast<char>(bytes[at + 5] ^ 0x01);
  ASSERT_EQ(bytes.substr(at, 6), "y_grae");
  WriteBytes(path, bytes);

  // Still a well-formed plan, and nothing but the checksum says it changed: resealed,
  // the same damaged plan passes both the reader's checks and the full verifier.
  proto::Plan damaged;
  ASSERT_TRUE(damaged.ParseFromString(bytes));
  EXPECT_EQ(damaged.checksum(), sample.checksum());
  proto::Plan resealed = damaged;
  ASSERT_TRUE(SealPlan(&resealed).ok());
  EXPECT_TRUE(VerifyPlan(resealed).ok()) << VerifyPlan(resealed);

  // The stored checksum is the sample's; the contents' is the CRC-32 of the file without
  // its last 5 bytes (the checksum field, see above).
  const uint32_t contents = Crc32(bytes.substr(0, bytes.size() - 5));
  EXPECT_NE(contents, sample.checksum());
  const absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(), ChecksumMessage(path, sample.checksum(), contents));
}

TEST(PlanIoTest, UnsealedPlanIsRefused) {
  const std::string path = TempDir() + "/unsealed.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.clear_checksum();
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  // Without the field the file is exactly the unsealed plan, whose CRC-32 is the
  // sample's seal.
  const std::string bytes = ReadBytes(path);
  EXPECT_EQ(Crc32(bytes), SampleDataParallelPlan().checksum());
  const absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            ChecksumMessage(path, 0, SampleDataParallelPlan().checksum()));
}

TEST(PlanIoTest, EditedButNotResealedPlanIsRefused) {
  // Any edit after sealing, even to a name no check looks at, is refused until resealed.
  const std::string path = TempDir() + "/edited.plan";
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_job()->set_name("edited");
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  proto::Plan unsealed = plan;
  unsealed.clear_checksum();
  const uint32_t contents = Crc32(SerializePlan(unsealed).value());
  EXPECT_NE(contents, SampleDataParallelPlan().checksum());
  EXPECT_EQ(ReadPlanFile(path).status().message(),
            ChecksumMessage(path, SampleDataParallelPlan().checksum(), contents));
  ASSERT_TRUE(SealPlan(&plan).ok());
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->job().name(), "edited");
}

TEST(PlanIoTest, SealedPlanThatFailsTheVerifierIsRefused) {
  // Passes the reader's id checks and carries a valid checksum, but two live registers
  // share bytes: only the full verifier refuses it.
  const std::string path = TempDir() + "/overlap.plan";
  proto::Plan plan = SampleDataParallelPlan();
  // y (register 3, offset 6144) moved onto t (register 1, offset 4096): t is live from
  // data (actor 0) to loss_grad (actor 3), y from mm (actor 2) to loss_grad.
  ASSERT_EQ(plan.devices(0).registers(1).offset(), 4096);
  ASSERT_EQ(plan.devices(0).registers(3).offset(), 6144);
  plan.mutable_devices(0)->mutable_registers(3)->set_offset(4096);
  ASSERT_TRUE(SealPlan(&plan).ok());
  ASSERT_TRUE(WritePlanFile(path, plan).ok());
  const absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "plan file '" + path +
                "': refused by the plan verifier: device 0:0: registers 1 and 3 share bytes in "
                "memory block 1 while both are live (actor positions 0-3 and 2-3)");
}

}  // namespace
}  // namespace oneflow::cli
