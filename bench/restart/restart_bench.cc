// Restart timing: two local daemons run an mlp (dp=2 x tp=2 over 2 nodes x 2 devices)
// through `oneflow launch --max_restarts=1 --checkpoint_every=10`; once the checkpoint
// after iteration 10 is complete, node 1's worker is SIGKILLed. Measured from the
// SIGKILL: the launch's "restart 1 of 1" line (failure seen, dumps fetched, other node
// cancelled), the restarted job's workers running (both processes exist), and its
// first metrics line (the first iteration trained after the resume).
//
//   bazel run -c opt //bench/restart:restart_bench [-- --runs=3]
//
// One JSON line per run: {"bench":"restart","run":...,"sigkill_to_restart_line_s":...,
// "sigkill_to_worker_running_s":...,"sigkill_to_first_iteration_s":...,
// "resumed_at_iteration":...}.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(RestartBench, SigkillToTrainingAgain) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/restart-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const std::string plan = CompilePlan("mlp",
                                       {"--batch=48", "--hidden=128", "--layers=3", "--compression=off", "--nodes=2",
                                        "--devices_per_node=2", "--dp=2", "--tp=2", "--zero=1"},
                                       "restart-mlp");
  Daemons daemons(2);
  for (int run = 0; run < BenchFlag("runs", 3); ++run) {
    const std::string job = absl::StrCat("restart-bench-", getpid(), "-", run);
    const std::string dir = TempPath(absl::StrCat("checkpoints-", run));
    std::unique_ptr<Process> launch =
        Launch(daemons, plan, 100000000, job, {"--checkpoint_dir=" + dir, "--checkpoint_every=10", "--max_restarts=1"});
    const auto ready_by = Clock::now() + milliseconds(60000);
    while (launch->Stderr().find("iter-00000010 complete") == std::string::npos && Clock::now() < ready_by) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_NE(launch->Stderr().find("iter-00000010 complete"), std::string::npos) << launch->Stderr();
    const pid_t victim = WorkerPid(job, 1);
    ASSERT_GT(victim, 0);
    ASSERT_EQ(kill(victim, SIGKILL), 0);
    const auto killed = Clock::now();
    double restart_line = -1, worker_running = -1, first_iteration = -1;
    size_t lines_at_restart = 0;
    int resumed_at = -1;
    const std::string restarted = job + "-restart1";
    while (Since(killed) < 120 && first_iteration < 0) {
      if (restart_line < 0 && launch->Stderr().find("restart 1 of 1") != std::string::npos) {
        restart_line = Since(killed);
        lines_at_restart = launch->StdoutLines().size();
      }
      if (worker_running < 0 && WorkerPid(restarted, 0) > 0 && WorkerPid(restarted, 1) > 0) {
        worker_running = Since(killed);
      }
      if (restart_line >= 0) {
        const std::vector<std::string> lines = launch->StdoutLines();
        if (lines.size() > lines_at_restart) {
          first_iteration = Since(killed);
          resumed_at = IterationOf(lines[lines_at_restart]);
        }
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::printf(
        "{\"bench\": \"restart\", \"run\": %d, \"model\": \"mlp dp=2 x tp=2 zero=1, 2 nodes x 2 devices\", "
        "\"sigkill_to_restart_line_s\": %.3f, \"sigkill_to_worker_running_s\": %.3f, "
        "\"sigkill_to_first_iteration_s\": %.3f, \"resumed_at_iteration\": %d}\n",
        run, restart_line, worker_running, first_iteration, resumed_at);
    std::fflush(stdout);
    EXPECT_GE(first_iteration, 0) << launch->Stderr();
    launch->Signal(SIGINT);
    EXPECT_TRUE(launch->Wait(milliseconds(30000)));
    EXPECT_TRUE(NoWorkersLeft(restarted, milliseconds(10000)));
  }
}

}  // namespace
}  // namespace oneflow::testing
