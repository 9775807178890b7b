// The daemons' bounds on in-memory checkpoints (docs/elastic.md, `oneflowd
// --memory_checkpoint_limit_bytes` and `--memory_checkpoint_idle`), on loopback daemons
// with an mlp on 3 nodes x 1 device (dp=3, ZeRO-1: every node saves a part).
// - A limit below one part: every put is refused (RESOURCE_EXHAUSTED naming the limit,
//   a warning on the job's log); a worker SIGKILLed with --max_restarts=1 finds no
//   in-memory checkpoint, the launch says it resumes from the disk checkpoint, and the
//   losses stay the uninterrupted run's.
// - An idle time: the parts of a launch that ended without dropping them (SIGKILLed) are
//   dropped by the daemon's next MemoryCheckpoints call once idle that long, and the
//   daemon says so; with the default idle time they stay.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
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

constexpr int kIterations = 30;

const std::vector<std::string>& Mlp() {
  static const std::vector<std::string> flags = {"--batch=48", "--hidden=64", "--layers=2", "--compression=off"};
  return flags;
}

std::string ThreeNodePlan(const std::string& name) {
  std::vector<std::string> flags = Mlp();
  flags.insert(flags.end(), {"--nodes=3", "--devices_per_node=1", "--dp=3", "--zero=1"});
  return CompilePlan("mlp", flags, name);
}

// Waits until daemon `i`'s stderr holds `needle` (`timeout` at most).
bool WaitForDaemonStderr(const Daemons& daemons, int i, const std::string& needle, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (daemons.Stderr(i).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

TEST(ElasticMemoryLimitsTest, PartsAboveTheLimitAreRefusedAndTheRestartResumesFromDisk) {
  const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", Mlp(), "mlp-1device"), kIterations);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  const std::string job = JobId("memory-limit");
  const std::string dir = TempPath("memory-limit-checkpoints");
  Daemons daemons(3, {"--memory_checkpoint_limit_bytes=1000"});  // Below any part of this model.
  ASSERT_EQ(daemons.size(), 3);
  std::unique_ptr<Process> launch = Launch(daemons, ThreeNodePlan("mlp-3x1-limit"), kIterations, job,
                                           {"--checkpoint_dir=" + dir, "--checkpoint_every=10",
                                            "--memory_checkpoint_every=10", "--max_restarts=1"});
  ASSERT_TRUE(WaitForIteration(*launch, 14)) << launch->Stderr();
  ASSERT_TRUE(WaitForStderr(*launch, "iter-00000010 complete")) << launch->Stderr();
  const pid_t victim = WorkerPid(job, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(launch->Wait(milliseconds(120000))) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << stderr_text;
  // Each node's own put, refused by its daemon with the limit named.
  for (int node = 0; node < 3; ++node) {
    const std::string part = absl::StrCat("node ", node, "'s part of the in-memory checkpoint after iteration 10");
    EXPECT_NE(stderr_text.find(absl::StrCat("[node ", node,
                                            "] warning: the in-memory checkpoint after iteration 10 is not kept on "
                                            "daemon ",
                                            daemons.address(node), ": RESOURCE_EXHAUSTED: daemon ",
                                            daemons.address(node), ": MemoryCheckpoints.Put of ", part, ": ", part,
                                            " of '", job, "' (")),
              std::string::npos)
        << "node " << node << ":\n"
        << stderr_text;
  }
  EXPECT_NE(stderr_text.find(", above its --memory_checkpoint_limit_bytes=1000; "), std::string::npos) << stderr_text;
  // The fallback is said, and the restart resumed from the disk checkpoint.
  EXPECT_NE(stderr_text.find("oneflow launch: no in-memory checkpoint is held by the daemons that answer (3 of 3; "
                             "the workers' warnings above say why a part was not kept); resuming from the disk "
                             "checkpoint after iteration "),
            std::string::npos)
      << stderr_text;
  EXPECT_EQ(stderr_text.find("resuming from the in-memory checkpoint"), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find("resumed from " + dir + "/iter-000000"), std::string::npos) << stderr_text;
  std::map<int, double> last;
  for (const std::string& line : launch->StdoutLines()) {
    if (IterationOf(line) >= 0) last[IterationOf(line)] = Losses({line})[0];
  }
  ASSERT_EQ(last.size(), static_cast<size_t>(kIterations));
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, reference[iteration], 1e-4 * std::abs(reference[iteration]) + 1e-6) << "iteration " << iteration;
  }
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

// One launch with in-memory checkpoints SIGKILLed once its parts are held (it never drops
// them), then a second launch's puts: the daemons' sweep of idle scopes runs on each call.
// Returns the first launch's job id.
std::string LeaveParts(Daemons& daemons, const std::string& name) {
  const std::string plan = ThreeNodePlan("mlp-3x1-" + name);
  const std::string orphan = JobId(name + "-orphan");
  std::unique_ptr<Process> first =
      Launch(daemons, plan, 1000, orphan,
             {"--checkpoint_dir=" + TempPath(name + "-orphan"), "--checkpoint_every=1000",
              "--memory_checkpoint_every=5", "--max_restarts=1"});
  EXPECT_TRUE(WaitForIteration(*first, 12)) << first->Stderr();
  first->Signal(SIGKILL);  // No MemoryCheckpoints.Drop: its parts stay with the daemons.
  EXPECT_TRUE(first->Wait(milliseconds(10000)));
  // Its workers end once the daemons see the launch gone.
  EXPECT_TRUE(NoWorkersLeft(orphan, milliseconds(30000)));
  std::this_thread::sleep_for(milliseconds(1500));  // Longer than the short idle time below.
  const std::string next = JobId(name + "-next");
  std::unique_ptr<Process> second =
      Launch(daemons, plan, 8, next,
             {"--checkpoint_dir=" + TempPath(name + "-next"), "--checkpoint_every=1000",
              "--memory_checkpoint_every=5", "--max_restarts=1"});
  EXPECT_TRUE(second->Wait(milliseconds(60000))) << second->Stderr();
  EXPECT_EQ(second->exit_code(), 0) << second->Stderr();
  return orphan;
}

TEST(ElasticMemoryLimitsTest, IdlePartsOfAKilledLaunchAreDropped) {
  Daemons daemons(3, {"--memory_checkpoint_idle=1s"});
  ASSERT_EQ(daemons.size(), 3);
  const std::string orphan = LeaveParts(daemons, "idle");
  // Every daemon held parts of the killed launch (its own node's and the previous one's).
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(WaitForDaemonStderr(daemons, i, absl::StrCat("oneflowd: dropped the in-memory checkpoints of '", orphan,
                                                               "' ("),
                                    milliseconds(5000)))
        << "daemon " << i << ":\n"
        << daemons.Stderr(i);
    EXPECT_NE(daemons.Stderr(i).find(" bytes): none of its parts was put, listed or fetched for "), std::string::npos)
        << daemons.Stderr(i);
    EXPECT_NE(daemons.Stderr(i).find(", at least --memory_checkpoint_idle=1s (a launch that ended without dropping "
                                     "them)"),
              std::string::npos)
        << daemons.Stderr(i);
  }
}

TEST(ElasticMemoryLimitsTest, PartsStayWithinTheDefaultIdleTime) {
  Daemons daemons(3);  // --memory_checkpoint_idle=30m
  ASSERT_EQ(daemons.size(), 3);
  LeaveParts(daemons, "busy");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(daemons.Stderr(i).find("dropped the in-memory checkpoints"), std::string::npos) << daemons.Stderr(i);
  }
}

}  // namespace
}  // namespace oneflow::testing
