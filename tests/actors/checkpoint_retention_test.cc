// Checkpoint retention (actors/checkpoint/checkpoint_retention.h) on real checkpoints of
// an mlp on tp=2: only the newest K complete ones remain, keep_every survivors and the resumed
// checkpoint stay, a resume from the directory continues the uninterrupted losses, and a
// process killed between the deletions of one checkpoint's files leaves nothing that a
// resume or the verifier takes as complete.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/checkpoint/checkpoint_retention.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

proto::Plan MlpPlan() {
  oneflow::testing::MlpPlanSpec spec;
  spec.layout = oneflow::testing::OnOneNode(/*dp=*/1, /*tp=*/2);  // Two shards per checkpoint, one per device.
  spec.model = examples::MlpConfig();
  spec.model.batch = 16;
  spec.model.in_features = 8;
  spec.model.hidden = 16;
  absl::StatusOr<proto::Plan> plan = oneflow::testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = (fs::path(::testing::TempDir()) / name).string();
  fs::remove_all(dir);
  return dir;
}

TrainResult Train(const proto::Plan& plan, int64_t iterations, const std::string& dir, int64_t every,
                  const RetentionPolicy& retention, const std::string& resume_from = "") {
  TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  options.checkpoint.dir = dir;
  options.checkpoint.every = every;
  options.checkpoint.retention = retention;
  options.resume_from = resume_from;
  absl::StatusOr<TrainResult> result = TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : TrainResult{};
}

// Every entry directly under `dir`, by name.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

RetentionPolicy Keep(int64_t last, int64_t every = 0) {
  RetentionPolicy policy;
  policy.keep_last = last;
  policy.keep_every = every;
  return policy;
}

TEST(CheckpointRetentionTest, KeepsTheTwoNewestAndResumesFromTheNewest) {
  const proto::Plan plan = MlpPlan();
  const std::string dir = FreshDir("keep2");
  Train(plan, 10, dir, 2, Keep(2));
  EXPECT_THAT(Entries(dir), ElementsAre("iter-00000008", "iter-00000010"));
  for (const std::string& checkpoint : CompleteCheckpoints(dir)) EXPECT_TRUE(VerifyCheckpointFiles(checkpoint).ok());

  // Resuming from the directory takes iter-10 and continues the uninterrupted curve.
  const TrainResult whole = Train(plan, 14, "", 0, Keep(0));
  const TrainResult resumed = Train(plan, 14, "", 0, Keep(0), dir);
  EXPECT_EQ(resumed.resumed_from, dir + "/iter-00000010");
  ASSERT_EQ(resumed.iterations.size(), 4u);
  for (size_t i = 0; i < resumed.iterations.size(); ++i) {
    const IterationMetrics& want = whole.iterations[10 + i];
    EXPECT_EQ(resumed.iterations[i].iteration, want.iteration);
    EXPECT_NEAR(resumed.iterations[i].loss, want.loss, 1e-4 * std::abs(want.loss));
  }
}

TEST(CheckpointRetentionTest, ZeroKeepsEveryCheckpoint) {
  const std::string dir = FreshDir("keep0");
  Train(MlpPlan(), 6, dir, 2, Keep(0));
  EXPECT_THAT(Entries(dir), ElementsAre("iter-00000002", "iter-00000004", "iter-00000006"));
}

TEST(CheckpointRetentionTest, EveryNthCheckpointSurvives) {
  const std::string dir = FreshDir("keep-every");
  Train(MlpPlan(), 12, dir, 1, Keep(2, 5));
  EXPECT_THAT(Entries(dir), ElementsAre("iter-00000005", "iter-00000010", "iter-00000011", "iter-00000012"));
}

TEST(CheckpointRetentionTest, TheCheckpointARunResumedFromStays) {
  const proto::Plan plan = MlpPlan();
  const std::string dir = FreshDir("protect");
  Train(plan, 6, dir, 2, Keep(0));
  // Resumed from the oldest, saving into the same directory: iter-2 is read by this run.
  Train(plan, 12, dir, 2, Keep(2), dir + "/iter-00000002");
  EXPECT_THAT(Entries(dir), ElementsAre("iter-00000002", "iter-00000010", "iter-00000012"));
}

TEST(CheckpointRetentionTest, NothingIsDeletedWhenTheNewCheckpointDoesNotVerify) {
  const std::string dir = FreshDir("unverified");
  Train(MlpPlan(), 6, dir, 2, Keep(0));
  const std::string newest = dir + "/iter-00000006";
  fs::resize_file(newest + "/" + ShardFileName(0, 1), 4);
  absl::StatusOr<std::vector<std::string>> deleted = PruneCheckpoints(dir, Keep(1), newest);
  ASSERT_FALSE(deleted.ok());
  EXPECT_EQ(deleted.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(deleted.status().message()), HasSubstr("device-0-1.shard' is damaged"));
  EXPECT_THAT(Entries(dir), ElementsAre("iter-00000002", "iter-00000004", "iter-00000006"));
}

TEST(CheckpointRetentionTest, NegativeCountsAreRefusedNamingTheFlag) {
  const absl::Status status = CheckRetentionPolicy(Keep(-1));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("--keep_checkpoints=-1 must be >= 0"));
  EXPECT_THAT(std::string(CheckRetentionPolicy(Keep(2, -3)).message()), HasSubstr("--keep_checkpoint_every=-3"));
}

// The process dies after the `crash_after`-th removal (the rename counts as the first) of
// iter-1's deletion; whatever that leaves must not pass for a complete checkpoint.
TEST(CheckpointRetentionTest, ACrashBetweenDeletionsLeavesNothingTakenAsComplete) {
  const proto::Plan plan = MlpPlan();
  const std::string pristine = FreshDir("crash-pristine");
  Train(plan, 4, pristine, 1, Keep(0));
  // The rename, the manifest, two shards, the directory: crash after each of the first four.
  for (int crash_after = 1; crash_after <= 4; ++crash_after) {
    SCOPED_TRACE(absl::StrCat("crash after removal ", crash_after));
    const std::string dir = FreshDir(absl::StrCat("crash-", crash_after));
    fs::copy(pristine, dir, fs::copy_options::recursive);
    RetentionPolicy policy = Keep(2);
    int removals = 0;
    policy.after_remove = [&](const std::string&) {
      if (++removals == crash_after) _exit(42);
    };
    EXPECT_EXIT(PruneCheckpoints(dir, policy, dir + "/iter-00000004").IgnoreError(), ::testing::ExitedWithCode(42),
                "");
    const std::string half = dir + "/iter-00000001" + kDeletingSuffix;
    ASSERT_TRUE(fs::exists(half));
    EXPECT_FALSE(fs::exists(dir + "/iter-00000001"));
    // Neither the directory scan, nor naming it, nor verifying it takes it as complete.
    EXPECT_THAT(CompleteCheckpoints(dir),
                ElementsAre(dir + "/iter-00000002", dir + "/iter-00000003", dir + "/iter-00000004"));
    EXPECT_EQ(FindCheckpoint(half).status().code(), absl::StatusCode::kNotFound);
    EXPECT_FALSE(VerifyCheckpointFiles(half).ok());
    // A resume from the directory takes the newest and trains on.
    const TrainResult resumed = Train(plan, 6, "", 0, Keep(0), dir);
    EXPECT_EQ(resumed.resumed_from, dir + "/iter-00000004");
    EXPECT_EQ(resumed.iterations.size(), 2u);
    // The next prune finishes the job: the leftover and the older checkpoint go.
    absl::StatusOr<std::vector<std::string>> deleted = PruneCheckpoints(dir, Keep(2), dir + "/iter-00000004");
    ASSERT_TRUE(deleted.ok()) << deleted.status();
    EXPECT_THAT(*deleted, ElementsAre(dir + "/iter-00000002"));
    EXPECT_THAT(Entries(dir), ElementsAre("iter-00000003", "iter-00000004"));
  }
}

}  // namespace
}  // namespace oneflow::actors
