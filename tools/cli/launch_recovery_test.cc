// The parts of `oneflow launch`'s recovery that need no cluster: choosing the resume
// checkpoint (and naming damaged newer ones), the recovery's cause, words and JSON, the
// --spare_nodes list. tests/cluster:elastic_launch_test runs them on daemons.
#include "tools/cli/launch_recovery.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "actors/checkpoint/checkpoint_format.h"
#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

namespace fs = std::filesystem;

// A complete checkpoint DIR/iter-N: a manifest that verifies (no shards: the launch only
// reads manifests).
void WriteCheckpoint(const fs::path& dir, int64_t iteration) {
  char name[32];
  std::snprintf(name, sizeof(name), "iter-%08lld", static_cast<long long>(iteration));
  const fs::path checkpoint = dir / name;
  fs::create_directories(checkpoint);
  proto::CheckpointManifest manifest;
  manifest.set_format_version(actors::kCheckpointFormatVersion);
  manifest.set_job("t");
  manifest.set_iteration(iteration);
  manifest.set_checksum(actors::ManifestChecksum(manifest));
  std::ofstream(checkpoint / actors::kManifestFile, std::ios::binary) << manifest.SerializeAsString();
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(getenv("TEST_TMPDIR")) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(LaunchRecoveryTest, NewestCompleteCheckpointIsChosen) {
  const fs::path dir = FreshDir("newest");
  WriteCheckpoint(dir, 10);
  WriteCheckpoint(dir, 20);
  fs::create_directories(dir / "iter-00000030");  // A save cut short: no manifest, no warning.
  absl::StatusOr<ResumePoint> point = NewestResumePoint(dir.string());
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->checkpoint, (dir / "iter-00000020").string());
  EXPECT_EQ(point->iteration, 20);
  EXPECT_TRUE(point->warnings.empty());
}

TEST(LaunchRecoveryTest, DamagedNewerManifestIsNamedOlderOneIsNot) {
  const fs::path dir = FreshDir("damaged");
  WriteCheckpoint(dir, 5);
  WriteCheckpoint(dir, 10);
  WriteCheckpoint(dir, 20);
  // Truncated manifests: one older than the chosen checkpoint (not mentioned), one newer.
  for (const char* name : {"iter-00000005", "iter-00000020"}) {
    const fs::path manifest = dir / name / actors::kManifestFile;
    fs::resize_file(manifest, fs::file_size(manifest) / 2);
  }
  absl::StatusOr<ResumePoint> point = NewestResumePoint(dir.string());
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->iteration, 10);
  ASSERT_EQ(point->warnings.size(), 1u);
  const std::string& warning = point->warnings[0];
  EXPECT_EQ(warning.rfind("checkpoint " + (dir / "iter-00000020").string() + " is damaged and skipped (", 0), 0u)
      << warning;
  EXPECT_NE(warning.find("); resuming from " + (dir / "iter-00000010").string()), std::string::npos) << warning;
}

TEST(LaunchRecoveryTest, NoCompleteCheckpointIsNotFound) {
  const fs::path dir = FreshDir("empty");
  EXPECT_EQ(NewestResumePoint(dir.string()).status().code(), absl::StatusCode::kNotFound);
}

TEST(LaunchRecoveryTest, CauseFollowsTheProbeThenTheFailure) {
  EXPECT_EQ(RecoveryCause(absl::UnavailableError("x"), /*daemon_answers=*/false), "daemon unreachable");
  EXPECT_EQ(RecoveryCause(absl::AbortedError("x"), /*daemon_answers=*/false), "daemon unreachable");
  EXPECT_EQ(RecoveryCause(absl::DeadlineExceededError("hang"), /*daemon_answers=*/false), "heartbeat gone");
  EXPECT_EQ(RecoveryCause(absl::DeadlineExceededError("hang"), /*daemon_answers=*/true), "worker failed");
  EXPECT_EQ(RecoveryCause(absl::AbortedError("killed"), /*daemon_answers=*/true), "worker failed");
}

TEST(LaunchRecoveryTest, JsonAndText) {
  proto::Recovery recovery;
  recovery.set_cause("daemon unreachable");
  recovery.set_node(1);
  recovery.set_node_address("127.0.0.1:5002");
  recovery.set_action("spare 127.0.0.1:5004 takes its place");
  recovery.set_from("disk");
  recovery.set_iteration(40);
  recovery.set_checkpoint("/ck/iter-00000040");
  EXPECT_EQ(RecoveryJson(recovery, 0.4123),
            "{\"cause\": \"daemon unreachable\", \"node\": 1, \"address\": \"127.0.0.1:5002\", \"action\": \"spare "
            "127.0.0.1:5004 takes its place\", \"from\": \"disk\", \"iteration\": 40, \"seconds\": 0.412}");
  EXPECT_EQ(RecoveryText(recovery),
            "node 1 (127.0.0.1:5002) lost (daemon unreachable): spare 127.0.0.1:5004 takes its place; resuming from "
            "disk checkpoint /ck/iter-00000040 (iteration 40)");
}

TEST(LaunchRecoveryTest, SpareListIsTrimmedAndEmptyGivesNone) {
  EXPECT_TRUE(ParseSpareNodes("").empty());
  EXPECT_EQ(ParseSpareNodes(" 10.0.0.4:5001, 10.0.0.5:5001 ,"),
            (std::vector<std::string>{"10.0.0.4:5001", "10.0.0.5:5001"}));
}

TEST(LaunchRecoveryTest, SpareRepeatedOrInNodesIsRefusedBeforeAnyCall) {
  const absl::Status in_nodes = CheckSpareNodes({"127.0.0.1:5002"}, {"127.0.0.1:5001", "127.0.0.1:5002"}, "t", "",
                                                absl::Seconds(1));
  EXPECT_EQ(in_nodes.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(in_nodes.message().find("spare 127.0.0.1:5002 is also in --nodes"), absl::string_view::npos) << in_nodes;
  const absl::Status twice =
      CheckSpareNodes({"127.0.0.1:5003", "127.0.0.1:5003"}, {"127.0.0.1:5001"}, "t", "", absl::Seconds(1));
  EXPECT_NE(twice.message().find("--spare_nodes lists 127.0.0.1:5003 twice"), absl::string_view::npos) << twice;
  const absl::Status port0 = CheckSpareNodes({"127.0.0.1:0"}, {"127.0.0.1:5001"}, "t", "", absl::Seconds(1));
  EXPECT_EQ(port0.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(port0.message().rfind("--spare_nodes: ", 0), 0u) << port0;
}

}  // namespace
}  // namespace oneflow::cli
