// Checkpoints end to end: save after k iterations on one layout, resume on others, and
// the resumed losses are the uninterrupted run's (mlp with SGD momentum, gpt with AdamW
// state); a save stopped midway leaves the previous checkpoint the newest complete one;
// damaged or truncated shards, damaged manifests, missing checkpoints and checkpoints
// of another model are refused before anything is loaded, naming the file or tensor.
#include <sched.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// {dp, tp, zero, pp, micro_batches}.
struct Layout {
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t zero = 0;
  int64_t pp = 1;
  int64_t micro_batches = 1;
};

std::string Name(const Layout& layout) {
  return absl::StrCat("dp=", layout.dp, " x tp=", layout.tp, " zero=", layout.zero, " pp=", layout.pp,
                      " micro_batches=", layout.micro_batches);
}

examples::ParallelLayout MakeLayout(const Layout& layout) {
  examples::ParallelFlags flags;
  flags.devices_per_node = layout.dp * layout.tp * layout.pp;
  flags.dp = layout.dp;
  flags.tp = layout.tp;
  flags.zero = layout.zero;
  flags.pp = layout.pp;
  flags.micro_batches = layout.micro_batches;
  return *examples::ParallelLayout::Create(flags);
}

proto::Plan MlpPlan(const Layout& layout, int64_t hidden = 64) {
  const examples::ParallelLayout parallel = MakeLayout(layout);
  examples::MlpConfig config;
  config.batch = 24;
  config.in_features = 16;
  config.hidden = hidden;
  CompileOptions options;
  options.cluster = parallel.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildMlp(config, parallel), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

proto::Plan GptPlan(const Layout& layout) {
  const examples::ParallelLayout parallel = MakeLayout(layout);
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 64;
  config.learning_rate = 3e-3;
  config.warmup_steps = 3;  // The schedule changes over the resumed iterations.
  CompileOptions options;
  options.cluster = parallel.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(config, parallel), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// A fresh directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir = (fs::path(testing::TempDir()) / name).string();
  fs::remove_all(dir);
  return dir;
}

absl::StatusOr<TrainResult> Train(const proto::Plan& plan, int64_t iterations, const std::string& checkpoint_dir,
                                  int64_t every, const std::string& resume_from = "") {
  TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  options.checkpoint.dir = checkpoint_dir;
  options.checkpoint.every = every;
  options.resume_from = resume_from;
  return TrainPlan(plan, options);
}

void ExpectResumedLosses(const TrainResult& resumed, const TrainResult& whole, int64_t first) {
  ASSERT_EQ(resumed.first_iteration, first);
  ASSERT_EQ(resumed.iterations.size(), whole.iterations.size() - first);
  for (size_t i = 0; i < resumed.iterations.size(); ++i) {
    const IterationMetrics& want = whole.iterations[first + i];
    EXPECT_EQ(resumed.iterations[i].iteration, want.iteration);
    EXPECT_NEAR(resumed.iterations[i].loss, want.loss, 1e-4 * std::abs(want.loss)) << "iteration " << want.iteration;
  }
}

// Saves on `save_on` every 3 iterations of 8, then resumes from the checkpoint after 3
// on each of `resume_on`.
void SaveAndResumeEverywhere(const std::string& name, proto::Plan (*make)(const Layout&),
                             const std::vector<Layout>& resume_on, const Layout& save_on = {2, 2}) {
  SCOPED_TRACE(absl::StrCat("saved on ", Name(save_on)));
  const std::string dir = FreshDir(name);
  const absl::StatusOr<TrainResult> whole = Train(make(save_on), 8, dir, 3);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->iterations.size(), 8u);
  EXPECT_LT(whole->iterations.back().loss, whole->iterations.front().loss);
  // After iterations 3 and 6 (not 8: 8 is not a multiple of 3).
  ASSERT_EQ(whole->checkpoints.size(), 2u);
  EXPECT_EQ(whole->checkpoints[0].iteration, 3);
  EXPECT_EQ(whole->checkpoints[1].iteration, 6);
  EXPECT_EQ(CompleteCheckpoints(dir).size(), 2u);
  // Checkpointing does not change the training.
  const absl::StatusOr<TrainResult> plain = Train(make(save_on), 8, "", 0);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(plain->iterations[i].loss, whole->iterations[i].loss);

  const std::string after3 = (fs::path(dir) / CheckpointDirName(3)).string();
  for (const Layout& layout : resume_on) {
    SCOPED_TRACE(Name(layout));
    const absl::StatusOr<TrainResult> resumed = Train(make(layout), 8, "", 0, after3);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    ExpectResumedLosses(*resumed, *whole, 3);
  }
  // The directory itself: its newest complete checkpoint, after 6.
  const absl::StatusOr<TrainResult> newest = Train(make({1, 1}), 8, "", 0, dir);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->resumed_from, (fs::path(dir) / CheckpointDirName(6)).string());
  ExpectResumedLosses(*newest, *whole, 6);
}

TEST(CheckpointTest, MlpResumesOnOtherLayouts) {
  SaveAndResumeEverywhere("mlp", [](const Layout& l) { return MlpPlan(l); }, {{1, 1}, {3, 1}, {1, 4}, {2, 2}});
}

TEST(CheckpointTest, GptWithAdamWResumesOnOtherLayouts) {
  SaveAndResumeEverywhere("gpt", &GptPlan, {{1, 1}, {1, 4}});
}

// ZeRO shards the optimizer state (and at stage 3 the parameters) and updates through
// out-of-place steps and assigns; micro-batches and pipeline stages make variables
// per-iteration actors on some devices only.
TEST(CheckpointTest, ZeroMicroBatchesAndStagesSaveAndResume) {
  SaveAndResumeEverywhere("mlp_zero2", [](const Layout& l) { return MlpPlan(l); }, {{1, 1}, {2, 2}},
                          {2, 1, 2});
  SaveAndResumeEverywhere("gpt_zero3", &GptPlan, {{1, 1}}, {2, 1, 3});
  SaveAndResumeEverywhere("mlp_pipeline", [](const Layout& l) { return MlpPlan(l); },
                          {{1, 1}, {3, 1, 0, 1, 2}}, {1, 1, 0, 2, 3});
}

TEST(CheckpointTest, ResumedRunsSaveAgainAndTheLastIterationIsSaved) {
  const std::string dir = FreshDir("chain");
  const proto::Plan plan = MlpPlan({2, 1});
  const absl::StatusOr<TrainResult> whole = Train(plan, 6, "", 0);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const absl::StatusOr<TrainResult> first = Train(plan, 4, dir, 2);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->checkpoints.size(), 2u);  // After 2 and after the last, 4.
  EXPECT_EQ(first->checkpoints[1].iteration, 4);
  const absl::StatusOr<TrainResult> second = Train(plan, 6, dir, 2, dir);
  ASSERT_TRUE(second.ok()) << second.status();
  ExpectResumedLosses(*second, *whole, 4);
  ASSERT_EQ(second->checkpoints.size(), 1u);
  EXPECT_EQ(second->checkpoints[0].iteration, 6);
}

// A write that takes 300 ms (on_saved sleeps on the writer thread) while an iteration
// takes milliseconds: the next checkpoint's copies wait for it, so the updates wait for
// them, and the writer says so (the worker's status file carries it to `oneflow launch`,
// which does not call such a rank hung); the writer thread, idle priority otherwise,
// runs at normal priority while training waits for it.
TEST(CheckpointTest, TrainingHeldByASlowWriteIsReported) {
  const std::string dir = FreshDir("slow-write");
  std::mutex mutex;
  std::vector<bool> waits;
  std::vector<int> writer_policies;  // at the end of each write
  TrainOptions options;
  options.node = -1;
  options.iterations = 4;
  options.checkpoint.dir = dir;
  options.checkpoint.every = 1;
  options.checkpoint.on_saved = [&](const CheckpointRecord&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::lock_guard<std::mutex> lock(mutex);
    writer_policies.push_back(sched_getscheduler(0));
  };
  options.checkpoint.on_training_wait = [&](bool waiting) {
    std::lock_guard<std::mutex> lock(mutex);
    waits.push_back(waiting);
  };
  const absl::StatusOr<TrainResult> result = TrainPlan(MlpPlan({2, 1}), options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_GE(waits.size(), 2u);
  // Started and stopped in turn, the last one stopped.
  for (size_t i = 0; i < waits.size(); ++i) EXPECT_EQ(waits[i], i % 2 == 0) << "call " << i;
  EXPECT_FALSE(waits.back());
  // After 1, 2, 3 and the last iteration. Each is waited for by the next checkpoint's
  // copies or the run's end, within milliseconds unless the machine stalls the test for
  // the write's 300 ms; the last one surely (the run ends right after staging it).
  ASSERT_EQ(writer_policies.size(), 4u);
  EXPECT_EQ(writer_policies.back(), SCHED_OTHER);
}

TEST(CheckpointTest, ASaveStoppedMidwayLeavesThePreviousCheckpoint) {
  const std::string dir = FreshDir("crash");
  const proto::Plan plan = MlpPlan({2, 2});
  ASSERT_TRUE(Train(plan, 2, dir, 2).ok());
  TrainOptions options;
  options.node = -1;
  options.iterations = 8;
  options.resume_from = dir;
  options.checkpoint.dir = dir;
  options.checkpoint.every = 2;
  options.checkpoint.fail_after_shards = 1;  // The save after 4 writes one shard of 4, then stops.
  const absl::StatusOr<TrainResult> crashed = TrainPlan(plan, options);
  ASSERT_FALSE(crashed.ok());
  EXPECT_THAT(crashed.status().message(), HasSubstr("stopped by the test hook after 1 shard files"));
  EXPECT_TRUE(fs::exists(fs::path(dir) / (CheckpointDirName(4) + kPartialSuffix)));
  const absl::StatusOr<CheckpointLocation> newest = FindCheckpoint(dir);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->manifest.iteration(), 2);
  // And it loads.
  const absl::StatusOr<TrainResult> resumed = Train(plan, 4, "", 0, dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->first_iteration, 2);
}

// A full disk (here: a file size limit of 64 KiB, as a quota would impose; root ignores
// a read-only directory, so the test uses the limit): the save fails with an error naming
// the shard file, training stops instead of running on without checkpoints, and the
// previous checkpoint stays the newest and loads.
TEST(CheckpointTest, AFullDiskStopsTrainingAndKeepsThePreviousCheckpoint) {
  const std::string dir = FreshDir("full");
  const proto::Plan plan = MlpPlan({2, 2}, /*hidden=*/512);  // shards of ~0.5 MB
  ASSERT_TRUE(Train(plan, 2, dir, 2).ok());
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  rlimit small = saved;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::StatusOr<TrainResult> full = Train(plan, 8, dir, 2, dir);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.status().message(), HasSubstr(CheckpointDirName(4) + kPartialSuffix)) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr("File too large")) << full.status();
  const absl::StatusOr<CheckpointLocation> newest = FindCheckpoint(dir);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->manifest.iteration(), 2);
  const absl::StatusOr<TrainResult> resumed = Train(plan, 4, "", 0, dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->first_iteration, 2);
}

// A truncated manifest makes the newest checkpoint incomplete: the resume from the
// directory takes the previous one and says which it skipped, why, and what it took.
TEST(CheckpointTest, ATruncatedNewestManifestIsNamedWhenTheResumeFallsBack) {
  const proto::Plan plan = MlpPlan({2, 2});
  const std::string dir = FreshDir("truncated_manifest");
  const absl::StatusOr<TrainResult> whole = Train(plan, 6, dir, 2);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const std::string newest = (fs::path(dir) / CheckpointDirName(6)).string();
  const std::string previous = (fs::path(dir) / CheckpointDirName(4)).string();
  const std::string manifest = (fs::path(newest) / kManifestFile).string();
  fs::resize_file(manifest, fs::file_size(manifest) / 2);

  std::vector<std::string> warnings;
  TrainOptions options;
  options.node = -1;
  options.iterations = 8;
  options.resume_from = dir;
  options.on_warning = [&warnings](const std::string& line) { warnings.push_back(line); };
  const absl::StatusOr<TrainResult> resumed = TrainPlan(plan, options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->first_iteration, 4);
  EXPECT_EQ(resumed->resumed_from, previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], ::testing::StartsWith(absl::StrCat("warning: checkpoint ", newest,
                                                              " is damaged and skipped (checkpoint manifest '",
                                                              manifest, "' is damaged: ")));
  EXPECT_THAT(warnings[0], ::testing::EndsWith(absl::StrCat("); resuming from ", previous)));
  // Iterations 4 .. 5 are the uninterrupted run's.
  for (const IterationMetrics& metrics : resumed->iterations) {
    if (metrics.iteration >= 6) break;
    EXPECT_NEAR(metrics.loss, whole->iterations[metrics.iteration].loss,
                1e-4 * std::abs(whole->iterations[metrics.iteration].loss));
  }

  // Given the previous checkpoint itself, nothing was skipped and nothing is said.
  warnings.clear();
  options.resume_from = previous;
  ASSERT_TRUE(TrainPlan(plan, options).ok());
  EXPECT_TRUE(warnings.empty()) << warnings[0];
}

// In-memory checkpoints (docs/elastic.md): the parts handed to to_memory every 3
// iterations are whole checkpoints (one process saves every shard), nothing goes to disk,
// and a run resumed from one on another layout continues the uninterrupted curve.
TEST(CheckpointTest, InMemoryCheckpointsResumeOnAnotherLayout) {
  const proto::Plan plan = MlpPlan({2, 2});
  std::vector<CheckpointInMemory> parts;
  std::vector<std::vector<int64_t>> saving;
  TrainOptions options;
  options.node = -1;
  options.iterations = 8;
  options.memory_checkpoint.every = 3;
  options.memory_checkpoint.to_memory = [&](CheckpointInMemory part, const std::vector<int64_t>& saving_nodes) {
    parts.push_back(std::move(part));
    saving.push_back(saving_nodes);
    return absl::OkStatus();
  };
  const absl::StatusOr<TrainResult> whole = TrainPlan(plan, options);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(parts.size(), 2u);  // After iterations 3 and 6.
  EXPECT_EQ(parts[0].manifest.iteration(), 3);
  EXPECT_EQ(parts[1].manifest.iteration(), 6);
  EXPECT_EQ(parts[1].name, "in-memory checkpoint after iteration 6");
  // dp=2 x tp=2: the two tp slices of each tensor, saved once (by dp rank 0's devices).
  EXPECT_EQ(parts[1].manifest.shards_size(), 2);
  EXPECT_EQ(saving[1], std::vector<int64_t>({0}));
  ASSERT_EQ(whole->memory_checkpoints.size(), 2u);
  EXPECT_TRUE(whole->checkpoints.empty());
  // Checkpointing in memory does not change the training.
  const absl::StatusOr<TrainResult> plain = Train(plan, 8, "", 0);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(plain->iterations[i].loss, whole->iterations[i].loss);

  TrainOptions resume;
  resume.node = -1;
  resume.iterations = 8;
  resume.resume_from_memory = std::make_shared<CheckpointInMemory>(parts[1]);
  const absl::StatusOr<TrainResult> resumed = TrainPlan(MlpPlan({1, 1}), resume);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->resumed_from, "in-memory checkpoint after iteration 6");
  ExpectResumedLosses(*resumed, *whole, 6);

  // A damaged byte is caught by the shard's CRC-32, naming the checkpoint.
  CheckpointInMemory damaged = parts[1];
  damaged.shards[1][5] ^= 0x20;
  resume.resume_from_memory = std::make_shared<CheckpointInMemory>(damaged);
  const absl::Status refused = TrainPlan(plan, resume).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat("in-memory checkpoint after iteration 6/",
                                                         damaged.manifest.shards(1).file(), "' is damaged")));
}

class DamagedCheckpointTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("damaged");
    ASSERT_TRUE(Train(plan_, 2, dir_, 2).ok());
    checkpoint_ = (fs::path(dir_) / CheckpointDirName(2)).string();
    shard_ = (fs::path(checkpoint_) / ShardFileName(0, 1)).string();
  }
  absl::Status Resume(const std::string& from) { return Train(plan_, 4, "", 0, from).status(); }

  proto::Plan plan_ = MlpPlan({2, 2});
  std::string dir_, checkpoint_, shard_;
};

TEST_F(DamagedCheckpointTest, AFlippedByteInAShardIsRefusedNamingTheFile) {
  std::fstream file(shard_, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(100);
  file.put('\x5a');
  file.close();
  const absl::Status status = Resume(dir_);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("checkpoint shard '", shard_, "' is damaged: CRC-32")));
}

TEST_F(DamagedCheckpointTest, ATruncatedShardIsRefused) {
  fs::resize_file(shard_, fs::file_size(shard_) - 8);
  const absl::Status status = Resume(checkpoint_);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("the manifest lists"));
  EXPECT_THAT(status.message(), HasSubstr(shard_));
}

TEST_F(DamagedCheckpointTest, ADamagedManifestIsRefused) {
  const std::string manifest = (fs::path(checkpoint_) / kManifestFile).string();
  std::fstream file(manifest, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(20);
  file.put('\x01');
  file.close();
  const absl::Status status = Resume(checkpoint_);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(manifest));
  // Under the directory it does not count as complete.
  EXPECT_EQ(Resume(dir_).code(), absl::StatusCode::kNotFound);
}

TEST_F(DamagedCheckpointTest, NoCheckpointIsNotFound) {
  const std::string empty = FreshDir("empty");
  fs::create_directories(empty);
  const absl::Status status = Resume(empty);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("no complete checkpoint in '", empty, "'")));
  EXPECT_EQ(Resume(empty + "/missing").code(), absl::StatusCode::kNotFound);
}

TEST_F(DamagedCheckpointTest, AnotherModelIsRefusedListingTheDifferences) {
  const absl::Status status = Train(MlpPlan({1, 1}, 32), 4, "", 0, dir_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("is not of this plan's model"));
  EXPECT_THAT(status.message(), HasSubstr("has shape [16, 64] in the checkpoint and [16, 32] in the plan"));
}

TEST_F(DamagedCheckpointTest, ACheckpointCoveringTheRunIsRefused) {
  const absl::Status status = Train(plan_, 2, "", 0, dir_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nothing is left of 2 iterations"));
}

}  // namespace
}  // namespace oneflow::actors
