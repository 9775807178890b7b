// A rank made slow by cycling its worker with SIGSTOP/SIGCONT, as a noisy neighbour, a
// debugger or a throttled container would (docs/diagnosis.md, "Slow ranks"), on an mlp
// with dp=2 over 2 nodes x 1 device through two real daemons:
//   - node 1's worker stopped 90 ms of every 100 ms, and 500 ms of every 550 ms: the
//     launch names node 1 / device 1:0 slow within 20 s of the first stop, says its
//     worker was found stopped, reports no hang, and the job goes on.
// (That a clean run with ±20% jitter raises nothing, with the daemons sampling the
// workers' state all along, is diagnosis_launch_test's JitteredCleanRunRaisesNothing.)
// Most of a stop-cycled worker's stopped time falls inside its all-reduce; before the
// daemons left that time out of collective_ns the rank looked like its peer (about 20%
// of its time outside collectives against 3%) and was never named.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Stops `pid` for `stopped` of every `period` until destroyed, then continues it.
class StopCycler {
 public:
  StopCycler(pid_t pid, milliseconds stopped, milliseconds period)
      : pid_(pid), thread_([this, stopped, period] {
          for (auto next = Clock::now(); !done_.load(); ) {
            kill(pid_, SIGSTOP);
            std::this_thread::sleep_for(stopped);
            kill(pid_, SIGCONT);
            next += period;
            std::this_thread::sleep_until(next);
          }
        }) {}
  ~StopCycler() {
    done_.store(true);
    thread_.join();
    kill(pid_, SIGCONT);
  }

 private:
  const pid_t pid_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void ExpectNamedSlowWithin20s(milliseconds stopped, milliseconds period) {
  const std::string plan = TwoNodeMlpPlan();
  const std::string job = absl::StrCat("stop-cycle-", stopped.count(), "-", getpid());
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job);
  ASSERT_TRUE(launch->WaitForLine([](const std::string& line) { return IterationOf(line) >= 50; }, milliseconds(60000)))
      << launch->Stderr();
  const pid_t victim = WorkerPid(job, 1);
  ASSERT_GT(victim, 0);
  double latency = -1;
  {
    StopCycler cycler(victim, stopped, period);
    const auto first_stop = Clock::now();
    latency = SecondsUntilStderrHas(*launch, "warning: slow rank: node 1 device 1:0 ", first_stop, milliseconds(25000));
    std::printf("stopped %lld ms of every %lld ms: slow rank named %.2f s after the first stop\n",
                static_cast<long long>(stopped.count()), static_cast<long long>(period.count()), latency);
    // The job goes on being cycled a little longer: still no hang.
    std::this_thread::sleep_for(milliseconds(2000));
  }
  const std::string text = launch->Stderr();
  ASSERT_GE(latency, 0) << text;
  EXPECT_LT(latency, 20.0);
  EXPECT_NE(text.find("its worker was stopped (SIGSTOP?) at "), std::string::npos) << text;
  EXPECT_EQ(text.find("hang:"), std::string::npos) << text;
  EXPECT_EQ(text.find("0:0 is about"), std::string::npos) << text;
  EXPECT_FALSE(launch->Wait(milliseconds(100))) << "the job goes on after the warning: " << text;
  launch->Signal(SIGINT);
  ASSERT_TRUE(launch->Wait(milliseconds(30000)));
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
}

TEST(SlowRankStopCycleTest, Stopped90msOfEvery100msIsNamedSlowNotHung) {
  ExpectNamedSlowWithin20s(milliseconds(90), milliseconds(100));
}

TEST(SlowRankStopCycleTest, Stopped500msOfEvery550msIsNamedSlowNotHung) {
  ExpectNamedSlowWithin20s(milliseconds(500), milliseconds(550));
}

}  // namespace
}  // namespace oneflow::testing
