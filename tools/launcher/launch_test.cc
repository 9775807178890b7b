// `oneflow launch` (the real CLI binary) against two real daemons running the fake
// worker: merged metrics, exit codes, the failure report, cancellation by signal.
#include <signal.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/oneflow_process.h"
#include "tools/launcher/testing/test_plans.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;
using testing::DaemonProcess;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A running `oneflow launch PLAN FLAGS...`.
class LaunchProcess : public testing::OneflowProcess {
 public:
  LaunchProcess(const proto::Plan& plan, std::vector<std::string> flags)
      : OneflowProcess(testing::LaunchArguments(plan, std::move(flags))) {}
};

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(absl::StrCat("node", i));
      ASSERT_TRUE(daemon.ok()) << daemon.status();
      daemons_.push_back(*std::move(daemon));
    }
  }

  std::vector<std::string> Flags(std::vector<std::string> more = {}) const {
    std::vector<std::string> flags = {
        absl::StrCat("--nodes=", daemons_[0]->address(), ",", daemons_[1]->address()),
        absl::StrCat("--token_file=", daemons_[0]->token_file()), "--job_id=launched",
        "--collective_timeout_s=20"};
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  }

  std::vector<std::unique_ptr<DaemonProcess>> daemons_;
};

TEST_F(LaunchTest, MergesTheNodesMetricsIntoOneLinePerIteration) {
  LaunchProcess launch(testing::FakeJobPlan("fake:finish", 2), Flags({"--iters=4"}));
  ASSERT_EQ(launch.Wait(), 0) << launch.Stderr();
  // Loss from node 0 (10/(i+1)), step the slower node's (node 1: 6 ms), 64 samples / 6 ms,
  // and each node's own step (node n: 5 + n ms).
  EXPECT_EQ(launch.Stdout(),
            "{\"iter\": 0, \"loss\": 10, \"step_ms\": 6.000, \"samples_per_s\": 10666.7, "
            "\"node_step_ms\": {\"0\": 5.000, \"1\": 6.000}}\n"
            "{\"iter\": 1, \"loss\": 5, \"step_ms\": 6.000, \"samples_per_s\": 10666.7, "
            "\"node_step_ms\": {\"0\": 5.000, \"1\": 6.000}}\n"
            "{\"iter\": 2, \"loss\": 3.33333, \"step_ms\": 6.000, \"samples_per_s\": 10666.7, "
            "\"node_step_ms\": {\"0\": 5.000, \"1\": 6.000}}\n"
            "{\"iter\": 3, \"loss\": 2.5, \"step_ms\": 6.000, \"samples_per_s\": 10666.7, "
            "\"node_step_ms\": {\"0\": 5.000, \"1\": 6.000}}\n");
  const std::string err = launch.Stderr();
  EXPECT_THAT(err, HasSubstr("oneflow launch: job 'launched' on 2 nodes"));
  EXPECT_THAT(err, HasSubstr("] fake worker pid "));
  EXPECT_THAT(err, ::testing::ContainsRegex(R"(\[node 0\] fake worker pid [0-9]+ on node 0)"));
  EXPECT_THAT(err, ::testing::ContainsRegex(R"(\[node 1\] fake worker pid [0-9]+ on node 1)"));
  // Each worker was told its own node's host and node 0's daemon as the rendezvous.
  EXPECT_THAT(err, HasSubstr(absl::StrCat("--rendezvous=", daemons_[0]->address())));
  EXPECT_THAT(err, HasSubstr("--node_rank=1"));
}

TEST_F(LaunchTest, MetricsFlagWritesTheLinesToAFile) {
  const std::string metrics = testing::TestDirectory("metrics") + "/metrics.jsonl";
  LaunchProcess launch(testing::FakeJobPlan("fake:finish", 2), Flags({"--iters=2", "--metrics=" + metrics}));
  ASSERT_EQ(launch.Wait(), 0) << launch.Stderr();
  EXPECT_EQ(launch.Stdout(), "");
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(ReadFile(metrics), '\n', absl::SkipEmpty())).size(), 2u);
  // `oneflow report` of a launched job's file shows each node's step (node n: 5 + n ms).
  const testing::OneflowResult report = testing::RunOneflow({"report", metrics});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("<h2>Per node</h2>"));
  EXPECT_THAT(report.out, HasSubstr("<tr><td>0</td><td>1</td><td>5.000 ms</td><td>5.000 ms</td><td>5.000 ms</td>"
                                    "<td>0 of 1 lines</td></tr>"));
  EXPECT_THAT(report.out, HasSubstr("<tr><td>1</td><td>1</td><td>6.000 ms</td><td>6.000 ms</td><td>6.000 ms</td>"
                                    "<td>1 of 1 lines</td></tr>"));
}

TEST_F(LaunchTest, ACrashedNodeFailsTheJobWithAReport) {
  LaunchProcess launch(testing::FakeJobPlan("fake:hang;node1=crash_after=2", 2), Flags({"--iters=10"}));
  const std::vector<pid_t> pids = launch.WorkerPids(2);
  ASSERT_EQ(launch.Wait(), 1) << launch.Stderr();
  const std::string err = launch.Stderr();
  const std::string node0 = absl::StrCat("node 0 (", daemons_[0]->address(), ")");
  const std::string node1 = absl::StrCat("node 1 (", daemons_[1]->address(), ")");
  EXPECT_THAT(err, ::testing::ContainsRegex(absl::StrCat(
                       R"(oneflow launch: job 'launched' failed on node 1 \()", daemons_[1]->address(),
                       R"(\): node 1 worker \(pid [0-9]+\) was killed by signal 9 \(Killed\))")));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("\n  ", node0, ": cancelled, signal 15 (Terminated)\n"
                                          "    device 0 (0:0): last completed collective 1 (1 iteration)\n")));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("\n  ", node1, ": failed, signal 9 (Killed)\n"
                                          "    device 1 (1:0): last completed collective 3 (2 iterations)")));
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_TRUE(testing::WaitProcessGone(pid, absl::Seconds(10))) << pid;
}

// Node 0's worker reports a failure caused by a peer before node 1's worker dies by
// itself, 300 ms later: the launch waits for node 1's own report and names node 1.
TEST_F(LaunchTest, ANodeThatFailedByItselfIsNamedBeforeTheSurvivorThatNoticed) {
  LaunchProcess launch(testing::FakeJobPlan("fake:hang;node0=peer_failed=lost the connection to rank 1;"
                                            "node1=crash_after_ms=300",
                                            2),
                       Flags({"--iters=10"}));
  ASSERT_EQ(launch.Wait(), 1) << launch.Stderr();
  const std::string err = launch.Stderr();
  EXPECT_THAT(err, ::testing::ContainsRegex(absl::StrCat(
                       R"(oneflow launch: job 'launched' failed on node 1 \()", daemons_[1]->address(),
                       R"(\): node 1 worker \(pid [0-9]+\) was killed by signal 9 \(Killed\))")));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("\n  node 0 (", daemons_[0]->address(), "): failed, exit code 1\n")));
}

// With no report from another node within the wait, the survivor's failure is the job's.
TEST_F(LaunchTest, ASurvivorsFailureStandsWhenNoOtherNodeReports) {
  LaunchProcess launch(testing::FakeJobPlan("fake:hang;node0=peer_failed=lost the connection to rank 1", 2),
                       Flags({"--iters=10"}));
  ASSERT_EQ(launch.Wait(), 1) << launch.Stderr();
  const std::string err = launch.Stderr();
  EXPECT_THAT(err, HasSubstr(absl::StrCat("oneflow launch: job 'launched' failed on node 0 (", daemons_[0]->address(),
                                          "): lost the connection to rank 1")));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("\n  node 1 (", daemons_[1]->address(), "): cancelled, signal 15")));
}

TEST_F(LaunchTest, WrongNumberOfNodesIsAClearError) {
  LaunchProcess launch(testing::FakeJobPlan("fake:finish", 2),
                       {absl::StrCat("--nodes=", daemons_[0]->address()),
                        absl::StrCat("--token_file=", daemons_[0]->token_file())});
  EXPECT_EQ(launch.Wait(), 1);
  EXPECT_THAT(launch.Stderr(), HasSubstr("--nodes lists 1 daemon but the plan's cluster has 2 nodes"));
}

TEST_F(LaunchTest, WrongTokenIsRefusedByTheDaemons) {
  const std::string token = testing::WriteTokenFile("not-the-token");
  LaunchProcess launch(testing::FakeJobPlan("fake:finish", 2),
                       {absl::StrCat("--nodes=", daemons_[0]->address(), ",", daemons_[1]->address()),
                        absl::StrCat("--token_file=", token)});
  EXPECT_EQ(launch.Wait(), 1);
  EXPECT_THAT(launch.Stderr(), HasSubstr("refused the job: Launcher.Submit: wrong token"));
}

TEST_F(LaunchTest, SigtermCancelsTheJobOnEveryNode) {
  LaunchProcess launch(testing::FakeJobPlan("fake:hang", 2), Flags());
  const std::vector<pid_t> pids = launch.WorkerPids(2);
  ASSERT_EQ(pids.size(), 2u) << launch.Stderr();
  launch.Signal(SIGTERM);
  EXPECT_EQ(launch.Wait(absl::Seconds(20)), 1);
  const std::string err = launch.Stderr();
  EXPECT_THAT(err, HasSubstr("oneflow launch: job 'launched' cancelled by signal 15 (Terminated)"));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("node 1 (", daemons_[1]->address(), "): cancelled")));
  for (pid_t pid : pids) EXPECT_TRUE(testing::WaitProcessGone(pid, absl::Seconds(10))) << pid;
}

TEST_F(LaunchTest, ADaemonDyingMidJobFailsThatNode) {
  LaunchProcess launch(testing::FakeJobPlan("fake:hang", 2), Flags());
  const std::vector<pid_t> pids = launch.WorkerPids(2);
  ASSERT_EQ(pids.size(), 2u) << launch.Stderr();
  daemons_[1]->Signal(SIGKILL);
  EXPECT_EQ(launch.Wait(absl::Seconds(30)), 1);
  EXPECT_THAT(launch.Stderr(),
              HasSubstr(absl::StrCat("job 'launched' failed: node 1 (", daemons_[1]->address(), ") became unreachable: ")));
  EXPECT_TRUE(testing::WaitProcessGone(pids[0], absl::Seconds(10)));
}

}  // namespace
}  // namespace oneflow::launcher
