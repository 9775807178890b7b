// `oneflow list`, `oneflow status JOB` and `oneflow cancel JOB` (the real CLI binary)
// against two real daemons running the fake worker: a job kept running by a `oneflow
// launch` is listed with its iteration by both nodes, shown, cancelled, listed as
// cancelled, and its workers are gone; a wrong token, an unreachable daemon and a TLS
// daemon asked in plaintext give `oneflow launch`'s errors; an unknown job is named with
// the node.
#include <signal.h>

#include <filesystem>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/oneflow_process.h"
#include "tools/launcher/testing/test_plans.h"
#include "tools/launcher/testing/tls_certificate.h"

namespace oneflow::launcher {
namespace {

using testing::DaemonProcess;
using ::testing::HasSubstr;
using testing::OneflowResult;
using testing::RunOneflow;

// The line `oneflow list` ends with when the daemons it heard from keep the defaults.
std::string KeptLine(const DaemonProcess& daemon) {
  return absl::StrCat("kept: running jobs and the last 8 ended jobs (directories under ",
                      std::filesystem::canonical(daemon.work_dir()).string(),
                      "); older ones are removed (oneflowd --keep_jobs, --keep_jobs_for)\n");
}

// What a daemon says to a call with the wrong token, after "Launcher.METHOD: ".
constexpr char kWrongToken[] =
    "wrong token; every call needs 'authorization: Bearer <token>' with the token of the daemons' --token_file";

// A match of the ECMAScript regex `pattern` somewhere in the string (gMock's ContainsRegex
// is POSIX here: no "\n", no "\]" in brackets).
MATCHER_P(HasMatch, pattern, absl::StrCat("has a match of ", pattern)) {
  return std::regex_search(arg, std::regex(pattern));
}

// `text` with regex metacharacters escaped.
std::string Quote(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

// What follows `marker` on its line in `text` ("" when absent).
std::string RestOfLine(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  return text.substr(begin, text.find('\n', begin) - begin);
}

class JobCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(absl::StrCat("node", i));
      ASSERT_TRUE(daemon.ok()) << daemon.status();
      daemons_.push_back(*std::move(daemon));
    }
  }

  std::string Nodes() const { return absl::StrCat("--nodes=", daemons_[0]->address(), ",", daemons_[1]->address()); }
  std::string Node(int i) const { return absl::StrCat("node ", i, " (", daemons_[i]->address(), ")"); }

  // `oneflow COMMAND [JOB] --nodes=<both daemons> --token_file=<theirs> MORE...`.
  OneflowResult Run(const std::string& command, std::vector<std::string> more = {}) const {
    std::vector<std::string> arguments = {command, Nodes(), absl::StrCat("--token_file=", daemons_[0]->token_file())};
    arguments.insert(arguments.end(), more.begin(), more.end());
    return RunOneflow(std::move(arguments));
  }

  std::vector<std::unique_ptr<DaemonProcess>> daemons_;
};

TEST_F(JobCommandsTest, ARunningJobIsListedShownCancelledAndGone) {
  // Three iterations, then it runs until cancelled; `oneflow launch` keeps it alive (a
  // daemon cancels a job whose client went away).
  testing::OneflowProcess launch(testing::LaunchArguments(
      testing::FakeJobPlan("fake:hang_after=3", 2),
      {Nodes(), absl::StrCat("--token_file=", daemons_[0]->token_file()), "--job_id=long-job", "--iters=10"}));
  const std::vector<pid_t> pids = launch.WorkerPids(2);
  ASSERT_EQ(pids.size(), 2u) << launch.Stderr();

  // Both nodes list it running at iteration 3 of 10 (the worker reports its iterations
  // as it goes: wait for the third).
  auto row = [this](int node, const std::string& state) {
    return std::regex(absl::StrCat("(^|\n)", node, " +", Quote(daemons_[node]->address()), " +long-job +", state,
                                   R"( +3/10 +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\n)"));
  };
  OneflowResult list;
  for (int attempt = 0; attempt < 200; ++attempt) {
    list = Run("list");
    if (std::regex_search(list.out, row(0, "running")) && std::regex_search(list.out, row(1, "running"))) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, ::testing::StartsWith("NODE  ADDRESS"));
  EXPECT_TRUE(std::regex_search(list.out, row(0, "running"))) << list.out;
  EXPECT_TRUE(std::regex_search(list.out, row(1, "running"))) << list.out;

  OneflowResult json = Run("list", {"--format=json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasMatch(R"("node": 0,[^}]*"job_id": "long-job",[^}]*"state": "running",[^}]*)"
                                 R"("last_iteration": 2,[^}]*"iterations": 10)"));
  EXPECT_THAT(json.out, HasMatch(R"("node": 1,[^}]*"job_id": "long-job",[^}]*"state": "running")"));

  // status: per node, the worker the launch saw and each device's progress.
  OneflowResult status = Run("status", {"long-job"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, ::testing::StartsWith("job 'long-job': running on nodes 0, 1\n"));
  for (int node = 0; node < 2; ++node) {
    EXPECT_THAT(status.out,
                HasMatch(absl::StrCat(Quote(Node(node)), ": running, iterations 3/10, worker pid [0-9]+, started ")));
    // Two collectives per iteration: the third iteration ends with collective 5.
    EXPECT_THAT(status.out,
                HasSubstr(absl::StrCat("\n    device ", node, ": last completed collective 5 (3 iterations)")));
  }
  for (pid_t pid : pids) EXPECT_THAT(status.out, HasSubstr(absl::StrCat("worker pid ", pid, ",")));

  // cancel returns once the workers are gone.
  OneflowResult cancel = Run("cancel", {"long-job"});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_THAT(cancel.out, ::testing::StartsWith("job 'long-job': cancelled on nodes 0, 1\n"));
  EXPECT_THAT(cancel.out, HasMatch(R"(\n    node 0 worker \(pid [0-9]+\) was cancelled \(a Cancel call\); )"
                                   R"(it ended by signal 15 \(Terminated\)\n)"));
  for (pid_t pid : pids) EXPECT_TRUE(testing::ProcessGone(pid)) << "worker " << pid << " is left after cancel";

  list = Run("list");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(std::regex_search(list.out, row(0, "cancelled"))) << list.out;
  EXPECT_TRUE(std::regex_search(list.out, row(1, "cancelled"))) << list.out;

  // The launch that followed the job reports it cancelled, not failed: no flight-recorder
  // dumps fetched (a cancelled worker writes none), no diagnosis, every node cancelled.
  EXPECT_EQ(launch.Wait(absl::Seconds(20)), 1);
  const std::string err = launch.Stderr();
  EXPECT_THAT(err, HasMatch(R"(\noneflow launch: job 'long-job' cancelled on node [01] \([^)]*\): node [01] worker )"
                            R"(\(pid [0-9]+\) was cancelled \(a Cancel call\); it ended by signal 15 \(Terminated\)\n)"));
  for (int node = 0; node < 2; ++node) {
    EXPECT_THAT(err, HasSubstr(absl::StrCat("\n  ", Node(node), ": cancelled, signal 15 (Terminated)\n")));
  }
  EXPECT_THAT(err, ::testing::Not(HasSubstr("failed"))) << err;
  EXPECT_THAT(err, ::testing::Not(HasSubstr("diagnosis"))) << err;
  EXPECT_THAT(err, ::testing::Not(HasSubstr("dump"))) << err;

  // Cancelling an ended job changes nothing.
  cancel = Run("cancel", {"long-job"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_THAT(cancel.out, ::testing::StartsWith("job 'long-job': cancelled on nodes 0, 1\n"));
}

TEST_F(JobCommandsTest, AFinishedJobIsListedFinished) {
  OneflowResult launch = RunOneflow(testing::LaunchArguments(
      testing::FakeJobPlan("fake:finish", 2),
      {Nodes(), absl::StrCat("--token_file=", daemons_[0]->token_file()), "--job_id=short-job", "--iters=4"}));
  ASSERT_EQ(launch.exit_code, 0) << launch.err;
  OneflowResult status = Run("status", {"short-job", "--format=json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("\"job_id\": \"short-job\""));
  EXPECT_THAT(status.out, HasMatch(R"("node": 1,[^\]]*"state": "finished",[^\]]*"last_iteration": 3,)"
                                   R"([^\]]*"end_unix_ms": [0-9]+,)"));
  EXPECT_THAT(status.out, HasMatch(R"("device": 1,\s*"completed_collectives": 8,\s*"completed_iterations": 4)"));
}

TEST_F(JobCommandsTest, AnUnknownJobIsNamedWithTheNode) {
  for (const std::string command : {"status", "cancel"}) {
    OneflowResult result = Run(command, {"no-such-job"});
    EXPECT_EQ(result.exit_code, 1) << command;
    EXPECT_EQ(result.out, "") << command;
    EXPECT_EQ(
        result.err,
        absl::StrCat("oneflow ", command, ": ", Node(0),
                     ": no job 'no-such-job' on this daemon (it keeps its running jobs and the last 8 ended ones)\n  ",
                     Node(1),
                     ": no job 'no-such-job' on this daemon (it keeps its running jobs and the last 8 ended ones)\n"))
        << command;
  }
  OneflowResult bad = Run("status", {"../etc"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "oneflow status: job id '../etc' starts with '.'\n");
  OneflowResult empty = Run("list");
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  // What each daemon keeps (their work directories differ here: one line per node).
  std::string kept = "no jobs on 2 nodes\n";
  for (int i = 0; i < 2; ++i) {
    absl::StrAppend(&kept, "kept on ", Node(i), ": running jobs and the last 8 ended jobs (directories under ",
                    std::filesystem::canonical(daemons_[i]->work_dir()).string(),
                    "); older ones are removed (oneflowd --keep_jobs, --keep_jobs_for)\n");
  }
  EXPECT_EQ(empty.out, kept);
}

TEST_F(JobCommandsTest, UsageErrors) {
  OneflowResult no_job = Run("status");
  EXPECT_EQ(no_job.exit_code, 2);
  EXPECT_THAT(no_job.err,
              HasSubstr("oneflow status: expected JOB, got no arguments\nusage: oneflow status JOB --nodes="));
  OneflowResult format = Run("list", {"--format=xml"});
  EXPECT_EQ(format.exit_code, 1);
  EXPECT_EQ(format.err, "oneflow list: --format=xml is not a choice; valid: text, json\n");
  OneflowResult no_nodes = RunOneflow({"list", absl::StrCat("--token_file=", daemons_[0]->token_file())});
  EXPECT_EQ(no_nodes.exit_code, 1);
  EXPECT_EQ(no_nodes.err, "oneflow list: --nodes=HOST:PORT,... is required: one oneflowd per node, node 0 first\n");
  OneflowResult launch_flag = Run("list", {"--iters=3"});
  EXPECT_EQ(launch_flag.exit_code, 2);
  EXPECT_THAT(launch_flag.err, HasSubstr("oneflow list: --iters is a flag of 'run'"));
}

TEST_F(JobCommandsTest, AWrongTokenGivesTheLaunchError) {
  const std::string token = absl::StrCat("--token_file=", testing::WriteTokenFile("not-the-token"));
  OneflowResult launch = RunOneflow(testing::LaunchArguments(testing::FakeJobPlan("fake:finish", 2), {Nodes(), token}));
  EXPECT_EQ(launch.exit_code, 1);
  // Whichever node answered first is the headline; the message is the same.
  EXPECT_THAT(launch.err, HasMatch(absl::StrCat(R"(failed: node [01] \(127\.0\.0\.1:[0-9]+\) refused the job: )",
                                                R"(Launcher\.Submit: )", Quote(kWrongToken), "\n")));
  for (const std::string method : {"List", "Status", "Cancel"}) {
    std::string command = method == "List" ? "list" : method == "Status" ? "status" : "cancel";
    std::vector<std::string> arguments = {command, Nodes(), token};
    if (command != "list") arguments.push_back("some-job");
    OneflowResult result = RunOneflow(arguments);
    EXPECT_EQ(result.exit_code, 1) << command;
    EXPECT_EQ(result.err, absl::StrCat("oneflow ", command, ": ", Node(0), " refused the request: Launcher.", method,
                                       ": ", kWrongToken, "\n  ", Node(1), " refused the request: Launcher.", method,
                                       ": ", kWrongToken, "\n"));
  }
}

TEST_F(JobCommandsTest, AnUnreachableDaemonGivesTheLaunchError) {
  // Node 1's address with nobody listening any more.
  daemons_[1]->Signal(SIGKILL);
  ASSERT_TRUE(daemons_[1]->Wait(absl::Seconds(10)).ok());
  const std::string unreachable = absl::StrCat(Node(1), " is unreachable: ");

  OneflowResult list = Run("list");
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_EQ(list.out, "no jobs on 1 node\n" + KeptLine(*daemons_[0]));  // Node 0 answered.
  EXPECT_THAT(list.err, ::testing::StartsWith(absl::StrCat("oneflow list: ", unreachable)));
  EXPECT_THAT(RestOfLine(list.err, unreachable), HasSubstr("failed to connect to all addresses"));
  // Every node's failure, one line each.
  OneflowResult status = Run("status", {"unreached"});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_EQ(status.err, absl::StrCat("oneflow status: ", Node(0), ": no job 'unreached' on this daemon (it keeps its ",
                                     "running jobs and the last 8 ended ones)\n  ", unreachable,
                                     RestOfLine(list.err, unreachable), "\n"));

  // `oneflow launch` says the same, gRPC's own words included.
  OneflowResult launch = RunOneflow(testing::LaunchArguments(
      testing::FakeJobPlan("fake:finish", 2),
      {Nodes(), absl::StrCat("--token_file=", daemons_[0]->token_file()), "--job_id=unreached"}));
  EXPECT_EQ(launch.exit_code, 1);
  EXPECT_THAT(launch.err, HasSubstr(absl::StrCat("oneflow launch: job 'unreached' failed: ", unreachable)));
  EXPECT_EQ(RestOfLine(launch.err, unreachable), RestOfLine(list.err, unreachable));
}

TEST(JobCommandsTlsTest, APlaintextClientOfATlsDaemonGivesTheLaunchError) {
  absl::StatusOr<testing::TlsCertificate> certificate = testing::MakeSelfSignedCertificate("tls");
  ASSERT_TRUE(certificate.ok()) << certificate.status();
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start("tls", {"--tls_cert=" + certificate->cert_file, "--tls_key=" + certificate->key_file});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::vector<std::string> flags = {absl::StrCat("--nodes=", (*daemon)->address()),
                                          absl::StrCat("--token_file=", (*daemon)->token_file())};
  const std::string unreachable = absl::StrCat("node 0 (", (*daemon)->address(), ") is unreachable: ");
  std::vector<std::string> launch_arguments = testing::LaunchArguments(testing::FakeJobPlan("fake:finish", 1), flags);
  OneflowResult launch = RunOneflow(launch_arguments);
  EXPECT_EQ(launch.exit_code, 1);
  OneflowResult list = RunOneflow({"list", flags[0], flags[1]});
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_THAT(list.err, ::testing::StartsWith(absl::StrCat("oneflow list: ", unreachable)));
  EXPECT_EQ(RestOfLine(list.err, unreachable), RestOfLine(launch.err, unreachable)) << launch.err;
  // With the certificate it answers.
  OneflowResult trusted = RunOneflow({"list", flags[0], flags[1], "--tls_ca=" + certificate->cert_file});
  EXPECT_EQ(trusted.exit_code, 0) << trusted.err;
  EXPECT_EQ(trusted.out, "no jobs on 1 node\n" + KeptLine(**daemon));
}

}  // namespace
}  // namespace oneflow::launcher
