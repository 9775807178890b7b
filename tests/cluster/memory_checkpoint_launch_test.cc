// In-memory checkpoints on a peer (docs/elastic.md, `oneflow launch
// --memory_checkpoint_every=K`) on loopback daemons. An mlp on 3 nodes x 1 device (dp=3,
// ZeRO-1: every node saves its shard of the momentum) keeps a checkpoint in memory every 10 iterations: each node's part on its own daemon
// and a replica on the next node's.
// - Node 1's daemon SIGKILLed (its part's own copy gone with it): the spare takes rank 1
//   and the job resumes from memory (node 1's part from node 2's replica), with no disk
//   checkpoint written at all; every iteration's final loss is the uninterrupted run's.
// - A worker SIGKILLed with --max_restarts: its daemon kept its part; the restart resumes
//   from memory.
// - Daemons 1 and 2 SIGKILLed together: node 1's part was on both, so the in-memory
//   checkpoint is incomplete; the launch says so and resumes from disk.
// - Bad flags are refused before anything trains.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
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

constexpr int kIterations = 120;

const std::vector<std::string>& Mlp() {
  static const std::vector<std::string> flags = {"--batch=48", "--hidden=128", "--layers=3", "--compression=off"};
  return flags;
}

std::string ThreeNodePlan(const std::string& name) {
  std::vector<std::string> flags = Mlp();
  // ZeRO-1: the momentum is sharded over the nodes, so every node saves a part.
  flags.insert(flags.end(), {"--nodes=3", "--devices_per_node=1", "--dp=3", "--zero=1"});
  return CompilePlan("mlp", flags, name);
}

const std::vector<double>& Reference() {
  static const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", Mlp(), "mlp-1device"), kIterations);
  return reference;
}

// Every iteration's last printed loss is the uninterrupted run's; the "from" and
// iteration of the one recovery line.
void ExpectUninterruptedCurve(Process& launch, const std::string& from, int* resumed_at) {
  std::map<int, double> last;
  int recovery_lines = 0;
  for (const std::string& line : launch.StdoutLines()) {
    const int iteration = IterationOf(line);
    if (iteration < 0) continue;
    if (line.find("\"recovery\": ") != std::string::npos) {
      ++recovery_lines;
      EXPECT_EQ(JsonValue(line, "from"), "\"" + from + "\"") << line;
      *resumed_at = std::stoi(JsonValue(line, "iteration"));
      EXPECT_EQ(*resumed_at, iteration) << line;
    }
    last[iteration] = Losses({line})[0];
  }
  EXPECT_EQ(recovery_lines, 1);
  ASSERT_EQ(last.size(), static_cast<size_t>(kIterations));
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, Reference()[iteration], 1e-4 * std::abs(Reference()[iteration]) + 1e-6)
        << "iteration " << iteration;
  }
}

bool HasCheckpointOnDisk(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename().string().rfind("iter-", 0) == 0) return true;
  }
  return false;
}

TEST(MemoryCheckpointLaunchTest, ALostNodeResumesFromThePeersReplica) {
  ASSERT_EQ(Reference().size(), static_cast<size_t>(kIterations));
  const std::string job = JobId("memory");
  const std::string dir = TempPath("memory-checkpoints");
  Daemons daemons(4);  // 0..2 run the job, 3 is the spare.
  ASSERT_EQ(daemons.size(), 4);
  // Disk checkpoints every 1000 iterations: none in this run; memory every 10.
  std::unique_ptr<Process> launch = Launch(
      daemons, ThreeNodePlan("mlp-3x1"), kIterations, job,
      {"--checkpoint_dir=" + dir, "--checkpoint_every=1000", "--memory_checkpoint_every=10",
       "--spare_nodes=" + daemons.address(3), "--collective_timeout_s=20"},
      daemons.Nodes(0, 3));
  // Parts are written in the background, and a checkpoint's staging waits for the one
  // before it (actors/checkpoint/checkpoint_writer.h): once iteration 32 is reported,
  // every node has staged iteration 30's, so iteration 20's parts are on the daemons.
  // (Killed at iteration 25, a loaded machine had not finished 20's replica yet: the
  // launch rightly resumed from 10.)
  ASSERT_TRUE(WaitForIteration(*launch, 32)) << launch->Stderr();
  daemons.Signal(1, SIGKILL);
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << stderr_text;
  // Node 1's part from node 2's daemon (the replica), the others from their own.
  EXPECT_NE(stderr_text.find(absl::StrCat("recovery: node 1 (", daemons.address(1), ") lost (daemon unreachable): spare ",
                                          daemons.address(3), " takes its place; resuming from memory checkpoint on "
                                          "daemons ", daemons.address(0), ", ", daemons.address(2), " (iteration ")),
            std::string::npos)
      << stderr_text;
  int resumed_at = -1;
  ExpectUninterruptedCurve(*launch, "memory", &resumed_at);
  EXPECT_GE(resumed_at, 20);
  EXPECT_EQ(resumed_at % 10, 0) << "resumed at " << resumed_at << ", not at a checkpoint";
  EXPECT_FALSE(HasCheckpointOnDisk(dir)) << "the recovery must not have needed a disk checkpoint";
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

TEST(MemoryCheckpointLaunchTest, AKilledWorkersPartStaysWithItsDaemon) {
  ASSERT_EQ(Reference().size(), static_cast<size_t>(kIterations));
  const std::string job = JobId("memory-worker");
  const std::string dir = TempPath("memory-worker-checkpoints");
  Daemons daemons(3);
  ASSERT_EQ(daemons.size(), 3);
  std::unique_ptr<Process> launch =
      Launch(daemons, ThreeNodePlan("mlp-3x1-w"), kIterations, job,
             {"--checkpoint_dir=" + dir, "--checkpoint_every=1000", "--memory_checkpoint_every=10", "--max_restarts=1"});
  ASSERT_TRUE(WaitForIteration(*launch, 25)) << launch->Stderr();
  const pid_t victim = WorkerPid(job, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << stderr_text;
  // Every node's part from its own daemon: the worker died, its daemon did not.
  EXPECT_NE(stderr_text.find(absl::StrCat("resuming from the in-memory checkpoint after iteration ")),
            std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find(absl::StrCat(" on daemons ", daemons.address(0), ", ", daemons.address(1), ", ",
                                          daemons.address(2))),
            std::string::npos)
      << stderr_text;
  std::map<int, double> last;
  for (const std::string& line : launch->StdoutLines()) {
    if (IterationOf(line) >= 0) last[IterationOf(line)] = Losses({line})[0];
  }
  ASSERT_EQ(last.size(), static_cast<size_t>(kIterations));
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, Reference()[iteration], 1e-4 * std::abs(Reference()[iteration]) + 1e-6)
        << "iteration " << iteration;
  }
  EXPECT_FALSE(HasCheckpointOnDisk(dir));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

TEST(MemoryCheckpointLaunchTest, BothCopiesOfAPartLostFallsBackToDisk) {
  ASSERT_EQ(Reference().size(), static_cast<size_t>(kIterations));
  const std::string job = JobId("memory-both");
  const std::string dir = TempPath("memory-both-checkpoints");
  Daemons daemons(5);  // 0..2 run the job, 3 and 4 are spares.
  ASSERT_EQ(daemons.size(), 5);
  std::unique_ptr<Process> launch = Launch(
      daemons, ThreeNodePlan("mlp-3x1-both"), kIterations, job,
      {"--checkpoint_dir=" + dir, "--checkpoint_every=10", "--memory_checkpoint_every=10",
       "--spare_nodes=" + daemons.address(3) + "," + daemons.address(4), "--collective_timeout_s=20"},
      daemons.Nodes(0, 3));
  ASSERT_TRUE(WaitForIteration(*launch, 25)) << launch->Stderr();
  // Node 1's part was on daemon 1 and its replica on daemon 2.
  daemons.Signal(1, SIGKILL);
  daemons.Signal(2, SIGKILL);
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << stderr_text;
  EXPECT_NE(stderr_text.find(absl::StrCat(" is incomplete: node 1's part is lost (it was on ", daemons.address(1),
                                          " and its replica on ", daemons.address(2),
                                          "); resuming from the disk checkpoint")),
            std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find("; resuming from disk checkpoint " + dir + "/iter-"), std::string::npos) << stderr_text;
  int resumed_at = -1;
  ExpectUninterruptedCurve(*launch, "disk", &resumed_at);
  EXPECT_GE(resumed_at, 10);
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

TEST(MemoryCheckpointLaunchTest, BadFlagsAreRefusedBeforeTraining) {
  const std::string plan = ThreeNodePlan("mlp-3x1-bad");
  const std::string dir = TempPath("memory-bad-checkpoints");
  Daemons daemons(3);
  ASSERT_EQ(daemons.size(), 3);
  struct Case {
    std::vector<std::string> flags;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--memory_checkpoint_every=-1", "--max_restarts=1", "--checkpoint_dir=" + dir, "--checkpoint_every=5"},
       "--memory_checkpoint_every=-1 must be >= 0 (0: no in-memory checkpoints)"},
      {{"--memory_checkpoint_every=10"},
       "--memory_checkpoint_every=10 is read only when the launch recovers from a failure: give --max_restarts=K "
       "or --spare_nodes too"},
  };
  for (const Case& bad : cases) {
    const std::string job = JobId("memory-bad");
    std::unique_ptr<Process> launch = Launch(daemons, plan, 4, job, bad.flags);
    ASSERT_TRUE(launch->Wait(milliseconds(60000)));
    EXPECT_EQ(launch->exit_code(), 1) << launch->Stderr();
    EXPECT_NE(launch->Stderr().find(bad.expected), std::string::npos) << launch->Stderr();
    EXPECT_TRUE(launch->StdoutLines().empty());
  }
}

}  // namespace
}  // namespace oneflow::testing
