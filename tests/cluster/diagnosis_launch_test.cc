// Hung and slow ranks named by `oneflow launch` from the daemons' heartbeats
// (docs/diagnosis.md), on an mlp with dp=2 over 2 nodes x 1 device:
//   - node 1's worker SIGSTOPped: the launch names node 1 / device 1:0 and the collective
//     it did not enter within 10 s, stops the job with that as the cause, prints the
//     diagnosis of the flight recorder dumps it fetched, and leaves nothing running;
//   - device 1:0 made 10x slower (ONEFLOW_TEST_SLOW_DEVICE): a warning names it within
//     20 s and the job goes on;
//   - a clean run with ±20% jitter (ONEFLOW_TEST_JITTER): no warning, no hang.
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

// Environment for the workers: the daemons are started after it is set and pass it on.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnvironment() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(DiagnosisLaunchTest, StoppedWorkerIsNamedWithin10sAndTheJobStops) {
  const std::string plan = TwoNodeMlpPlan();
  const std::string job = JobId("hang");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job);
  ASSERT_TRUE(launch->WaitForLine([](const std::string& line) { return IterationOf(line) >= 50; }, milliseconds(60000)))
      << launch->Stderr();
  std::this_thread::sleep_for(milliseconds(1500));  // Heartbeats of a running job.
  const pid_t victim = WorkerPid(job, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGSTOP), 0);
  const auto stopped = Clock::now();
  struct Resume {
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{victim};

  const double latency = SecondsUntilStderrHas(*launch, "oneflow launch: hang: collective", stopped, milliseconds(20000));
  std::printf("hang named %.2f s after SIGSTOP\n", latency);
  ASSERT_GE(latency, 0) << launch->Stderr();
  EXPECT_LT(latency, 10.0);
  ASSERT_TRUE(launch->Wait(milliseconds(30000))) << launch->Stderr();
  EXPECT_EQ(launch->exit_code(), 1);
  const std::string text = launch->Stderr();
  // The cause: node 1's device, the collective and who arrived, not node 0's timeout.
  EXPECT_NE(text.find("job '" + job + "' failed: hang: collective "), std::string::npos) << text;
  EXPECT_NE(text.find("(ALL_REDUCE, "), std::string::npos) << text;
  EXPECT_NE(text.find("node 1 device 1:0 (rank 1 of the group) "), std::string::npos) << text;
  EXPECT_NE(text.find("its worker is stopped (SIGSTOP?)"), std::string::npos) << text;
  EXPECT_NE(text.find("Arrived and waiting: 0:0"), std::string::npos) << text;
  EXPECT_EQ(text.find("made no progress for 60000 ms"), std::string::npos) << text;
  // The automatic diagnosis of the dumps fetched before the cancel: node 0's, and
  // node 1 could not write one.
  EXPECT_NE(text.find("diagnosis: flight recorder dumps of node 0 (node 1: node 1 worker"), std::string::npos)
      << text;
  EXPECT_NE(text.find("is stopped (SIGSTOP?): it cannot write a dump"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    hang: collective 0 (ALL_REDUCE, "), std::string::npos) << text;
  EXPECT_NE(text.find("no dump for 1:0"), std::string::npos) << text;
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
}

TEST(DiagnosisLaunchTest, TenTimesSlowerRankIsNamedWithin20s) {
  const std::string plan = TwoNodeMlpPlan();
  const std::string job = JobId("slow");
  ScopedEnvironment slow("ONEFLOW_TEST_SLOW_DEVICE", "1:0:10");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job);
  ASSERT_TRUE(launch->WaitForLine([](const std::string& line) { return IterationOf(line) >= 0; }, milliseconds(60000)))
      << launch->Stderr();
  const auto first = Clock::now();
  const double latency = SecondsUntilStderrHas(*launch, "warning: slow rank: node 1 device 1:0 ", first, milliseconds(25000));
  std::printf("slow rank named %.2f s after the first iteration\n", latency);
  ASSERT_GE(latency, 0) << launch->Stderr();
  EXPECT_LT(latency, 20.0);
  EXPECT_EQ(launch->Stderr().find("hang:"), std::string::npos) << launch->Stderr();
  EXPECT_EQ(launch->Stderr().find("0:0 is about"), std::string::npos) << launch->Stderr();
  EXPECT_FALSE(launch->Wait(milliseconds(100))) << "the job goes on after the warning: " << launch->Stderr();
  launch->Signal(SIGINT);
  ASSERT_TRUE(launch->Wait(milliseconds(30000)));
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
}

TEST(DiagnosisLaunchTest, JitteredCleanRunRaisesNothing) {
  const std::string plan = TwoNodeMlpPlan();
  const std::string job = JobId("clean");
  ScopedEnvironment jitter("ONEFLOW_TEST_JITTER", "0.2");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job);
  ASSERT_TRUE(launch->WaitForLine([](const std::string& line) { return IterationOf(line) >= 0; }, milliseconds(60000)))
      << launch->Stderr();
  std::this_thread::sleep_for(milliseconds(15000));
  EXPECT_FALSE(launch->Wait(milliseconds(10))) << launch->Stderr();
  EXPECT_EQ(launch->Stderr().find("warning:"), std::string::npos) << launch->Stderr();
  EXPECT_EQ(launch->Stderr().find("hang:"), std::string::npos) << launch->Stderr();
  launch->Signal(SIGINT);
  ASSERT_TRUE(launch->Wait(milliseconds(30000)));
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
}

}  // namespace
}  // namespace oneflow::testing
