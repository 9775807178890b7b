// Checkpoints through `oneflow launch`: an mlp with dp=2 x tp=2 and ZeRO-1 on 2 nodes x
// 2 devices (so both nodes hold slices of the optimizer state) saves every 2 iterations,
// each node writing its own devices' shards into one directory and node 0 completing
// each checkpoint once both nodes' shards are in. Resuming from it on other layouts (1
// node x 3 devices through `oneflow run`, 2 nodes x 1 device through `oneflow launch`)
// continues the losses of the uninterrupted run, the metrics lines carrying the resumed
// iteration numbers.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kIterations = 8;
constexpr int kFirstRun = 5;  // Checkpoints after 2 and 4; the resume starts at 4.

// Job ids are found among every process of the machine (WorkerPid): unique per test
// process, so that parallel runs of this test never touch each other's workers.
// The metrics lines of `lines` are iterations first .. first + n - 1 with the losses of
// `reference` there, within 1e-4 relative.
::testing::AssertionResult ContinuesReference(const std::vector<std::string>& lines,
                                              const std::vector<double>& reference, int first) {
  std::vector<int> iterations;
  for (const std::string& line : lines) {
    if (IterationOf(line) >= 0) iterations.push_back(IterationOf(line));
  }
  const std::vector<double> losses = Losses(lines);
  if (static_cast<int>(reference.size()) != kIterations) {
    return ::testing::AssertionFailure() << "the reference has " << reference.size() << " losses";
  }
  if (static_cast<int>(losses.size()) != kIterations - first || iterations.size() != losses.size()) {
    return ::testing::AssertionFailure() << losses.size() << " losses, expected iterations " << first << " .. "
                                         << kIterations - 1;
  }
  for (size_t i = 0; i < losses.size(); ++i) {
    const int iteration = first + static_cast<int>(i);
    if (iterations[i] != iteration) {
      return ::testing::AssertionFailure() << "line " << i << " is iteration " << iterations[i] << ", expected "
                                           << iteration;
    }
    const double expected = reference[iteration];
    if (std::abs(losses[i] - expected) > 1e-4 * std::abs(expected) + 1e-6) {
      return ::testing::AssertionFailure() << "iteration " << iteration << ": loss " << losses[i]
                                           << ", the uninterrupted run's " << expected;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(CheckpointLaunchTest, TwoNodesSaveAndOtherLayoutsResume) {
  const std::vector<std::string> mlp = {"--batch=48", "--hidden=64", "--layers=3", "--compression=off"};
  const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", mlp, "mlp-1device"), kIterations);
  std::vector<std::string> flags = mlp;
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=2", "--dp=2", "--tp=2", "--zero=1"});
  const std::string plan22 = CompilePlan("mlp", flags, "mlp-2x2");
  const std::string dir = TempPath("checkpoints");

  Daemons daemons(2);
  std::unique_ptr<Process> save =
      Launch(daemons, plan22, kFirstRun, JobId("ck-save"), {"--checkpoint_dir=" + dir, "--checkpoint_every=2"});
  ASSERT_TRUE(save->Wait(milliseconds(120000)));
  ASSERT_EQ(save->exit_code(), 0) << save->Stderr();
  {
    const std::vector<double> losses = Losses(save->StdoutLines());
    ASSERT_EQ(losses.size(), static_cast<size_t>(kFirstRun)) << save->Stderr();
    for (int i = 0; i < kFirstRun; ++i) EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i]) + 1e-6);
  }
  // Both checkpoints complete, each with the shards of both nodes; no partial save left.
  for (const char* name : {"iter-00000002", "iter-00000004"}) {
    const std::filesystem::path checkpoint = std::filesystem::path(dir) / name;
    EXPECT_TRUE(std::filesystem::exists(checkpoint / "manifest.pb")) << checkpoint;
    for (const char* shard : {"device-0-0.shard", "device-0-1.shard", "device-1-0.shard", "device-1-1.shard"}) {
      EXPECT_TRUE(std::filesystem::exists(checkpoint / shard)) << checkpoint / shard;
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().extension(), "") << "left behind: " << entry.path();
  }
  EXPECT_NE(save->Stderr().find("checkpoint " + dir + "/iter-00000004 complete"), std::string::npos)
      << save->Stderr();
  Process verify({Runfile("tools/cli/oneflow"), "checkpoint", dir, "--verify"});
  ASSERT_TRUE(verify.Wait(milliseconds(60000)));
  EXPECT_EQ(verify.exit_code(), 0) << verify.Stderr();

  // 1 node x 3 devices, one process.
  const std::vector<std::string> three = {"--devices_per_node=3", "--dp=3"};
  std::vector<std::string> flags3 = mlp;
  flags3.insert(flags3.end(), three.begin(), three.end());
  Process run3({Runfile("tools/cli/oneflow"), "run", CompilePlan("mlp", flags3, "mlp-3"),
                absl::StrCat("--iters=", kIterations), "--resume_from=" + dir});
  ASSERT_TRUE(run3.Wait(milliseconds(120000)));
  ASSERT_EQ(run3.exit_code(), 0) << run3.Stderr();
  EXPECT_TRUE(ContinuesReference(run3.StdoutLines(), reference, 4)) << "resumed on 1 node x 3 devices";

  // 2 nodes x 1 device, through the daemons.
  std::vector<std::string> flags21 = mlp;
  flags21.insert(flags21.end(), {"--nodes=2", "--devices_per_node=1", "--dp=2"});
  std::unique_ptr<Process> resume =
      Launch(daemons, CompilePlan("mlp", flags21, "mlp-2x1"), kIterations, JobId("ck-resume"), {"--resume_from=" + dir});
  ASSERT_TRUE(resume->Wait(milliseconds(120000)));
  ASSERT_EQ(resume->exit_code(), 0) << resume->Stderr();
  EXPECT_TRUE(ContinuesReference(resume->StdoutLines(), reference, 4)) << "resumed on 2 nodes x 1 device";
  EXPECT_TRUE(NoWorkersLeft(JobId("ck-resume"), milliseconds(10000)));
}

// --max_restarts=1: node 1's worker SIGKILLed mid-run; the launch submits the job again
// (id ck-restart-PID-restart1) from the newest complete checkpoint and every iteration's
// final loss, those after the resume point included, is the uninterrupted run's.
TEST(CheckpointLaunchTest, KilledWorkerRestartsFromTheNewestCheckpoint) {
  constexpr int kLong = 400;
  const std::string job = JobId("ck-restart");
  const std::vector<std::string> mlp = {"--batch=48", "--hidden=128", "--layers=3", "--compression=off"};
  std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", mlp, "mlp-long-1device"), kLong);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kLong));
  std::vector<std::string> flags = mlp;
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=2", "--dp=2", "--tp=2", "--zero=1"});
  const std::string plan = CompilePlan("mlp", flags, "mlp-long-2x2");
  const std::string dir = TempPath("restart-checkpoints");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(
      daemons, plan, kLong, job,
      {"--checkpoint_dir=" + dir, "--checkpoint_every=10", "--max_restarts=1", "--collective_timeout_s=20"});
  // Killed once the first checkpoint is complete (and reported to the launch).
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(60000);
  while (launch->Stderr().find("iter-00000010 complete") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_NE(launch->Stderr().find("iter-00000010 complete"), std::string::npos) << launch->Stderr();
  const pid_t victim = WorkerPid(job, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  EXPECT_NE(stderr_text.find("oneflow launch: restart 1 of 1: job '" + job + "' failed on node 1"), std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find("job '" + job + "-restart1' on 2 nodes, resuming from " + dir), std::string::npos)
      << stderr_text;
  // Every iteration printed, the resumed ones twice; the last print of each is final.
  std::map<int, double> last;
  int repeated = 0, resumed_at = -1;
  for (const std::string& line : launch->StdoutLines()) {
    const int iteration = IterationOf(line);
    if (iteration < 0) continue;
    if (last.count(iteration) > 0) {
      ++repeated;
      if (resumed_at < 0) resumed_at = iteration;
    }
    last[iteration] = Losses({line})[0];
  }
  ASSERT_EQ(last.size(), static_cast<size_t>(kLong));
  // The resume point as the restarted workers report it ("[node N] resumed from DIR at
  // iteration K"): a checkpoint. The iterations printed before the kill and after K run
  // twice; none do when the kill came before the metrics of K were merged.
  const std::string marker = "] resumed from " + dir;
  const size_t at = stderr_text.find(marker);
  ASSERT_NE(at, std::string::npos) << stderr_text;
  const size_t number = stderr_text.find(" at iteration ", at) + std::string(" at iteration ").size();
  const int resumed_from = std::stoi(stderr_text.substr(number));
  EXPECT_EQ(resumed_from % 10, 0) << "resumed at " << resumed_from << ", not at a checkpoint";
  EXPECT_GE(resumed_from, 10);
  if (repeated > 0) {
    EXPECT_EQ(resumed_at, resumed_from);
  }
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, reference[iteration], 1e-4 * std::abs(reference[iteration]) + 1e-6) << "iteration " << iteration;
  }
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

TEST(CheckpointLaunchTest, BadCheckpointFlagsAreRefusedNamingTheFlag) {
  Daemons daemons(2);
  std::vector<std::string> flags = {"--nodes=2", "--devices_per_node=1", "--dp=2", "--compression=off"};
  const std::string plan = CompilePlan("mlp", flags, "mlp-flags");
  std::unique_ptr<Process> launch = Launch(daemons, plan, 4, JobId("ck-flags"), {"--checkpoint_dir=/tmp/x"});
  ASSERT_TRUE(launch->Wait(milliseconds(60000)));
  EXPECT_EQ(launch->exit_code(), 1) << launch->Stderr();
  EXPECT_NE(launch->Stderr().find("--checkpoint_dir='/tmp/x' and --checkpoint_every=0 go together"),
            std::string::npos)
      << launch->Stderr();
}

}  // namespace
}  // namespace oneflow::testing
