// A real oneflowd with the fake worker: what Submit streams, what it refuses before a
// worker starts, and the token on every method of both services.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "plan/plan_checksum.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/test_plans.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;
using testing::DaemonProcess;
using testing::FakeJobPlan;
using testing::SubmitAndWait;
using testing::SubmitRequestFor;
using testing::SubmitResult;

std::unique_ptr<DaemonProcess> StartDaemon(std::vector<std::string> flags = {}) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start("oneflowd", std::move(flags));
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

std::vector<std::string> LogLines(const SubmitResult& result) {
  std::vector<std::string> lines;
  for (const proto::JobEvent& event : result.events) {
    if (event.has_log()) lines.push_back(event.log().text());
  }
  return lines;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
  return text;
}

TEST(OneflowdTest, SubmitStreamsStartedMetricsAndFinished) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  const SubmitResult result =
      SubmitAndWait(*stub, SubmitRequestFor("job-ok", FakeJobPlan("fake:finish", 1, 2), 0, daemon->address(), 5));
  ASSERT_TRUE(result.status.ok()) << result.status.error_message() << "\n" << daemon->Stderr();
  ASSERT_FALSE(result.events.empty());
  ASSERT_TRUE(result.events.front().has_started());
  const int64_t pid = result.worker_pid();
  EXPECT_GT(pid, 0);
  std::vector<int64_t> iterations;
  for (const proto::JobEvent& event : result.events) {
    EXPECT_EQ(event.job_id(), "job-ok");
    EXPECT_EQ(event.node_rank(), 0);
    if (event.has_metrics()) iterations.push_back(event.metrics().iteration());
  }
  EXPECT_EQ(iterations, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  ASSERT_TRUE(result.events.back().has_finished()) << result.events.back().DebugString();
  const auto& progress = result.events.back().finished().progress();
  ASSERT_EQ(progress.size(), 2);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(progress[d].device(), d);
    EXPECT_EQ(progress[d].completed_collectives(), 5 * testing::kCollectivesPerIteration);
    EXPECT_EQ(progress[d].completed_iterations(), 5);
  }
  // The worker got exactly the contract's flags.
  const std::string logs = Joined(LogLines(result));
  EXPECT_THAT(logs, HasSubstr(absl::StrCat("fake worker pid ", pid, " on node 0")));
  const std::string node_dir = absl::StrCat(daemon->work_dir(), "/job-ok/node0");
  for (const std::string& flag :
       {absl::StrCat("--plan=", node_dir, "/plan.pb"), std::string("--job_id=job-ok"), std::string("--node_rank=0"),
        std::string("--iters=5"), absl::StrCat("--rendezvous=", daemon->address()), std::string("--token_file=/"),
        std::string("--collective_timeout_s=20"), std::string("--worker_host=127.0.0.1"), std::string("--events_fd=3"),
        absl::StrCat("--status_file=", node_dir, "/status")}) {
    EXPECT_THAT(logs, HasSubstr(flag));
  }
  EXPECT_THAT(logs, ::testing::Not(HasSubstr("--tls_ca")));
  // The worker is reaped, its files kept for debugging.
  EXPECT_TRUE(testing::WaitProcessGone(static_cast<pid_t>(pid), absl::Seconds(5)));
  EXPECT_TRUE(std::filesystem::exists(node_dir + "/plan.pb"));
  EXPECT_TRUE(std::filesystem::exists(node_dir + "/worker.log"));

  proto::StatusRequest request;
  request.set_job_id("job-ok");
  proto::JobStatus status;
  ASSERT_TRUE(stub->Status(testing::Context().get(), request, &status).ok());
  EXPECT_EQ(status.state(), proto::JobStatus::FINISHED);
  EXPECT_EQ(status.last_iteration(), 4);
  EXPECT_EQ(status.worker_pid(), pid);
  // The job's record: iterations asked, times, the terminal event's progress.
  EXPECT_EQ(status.iterations(), 5);
  EXPECT_GT(status.start_unix_ms(), 0);
  EXPECT_GE(status.end_unix_ms(), status.start_unix_ms());
  ASSERT_EQ(status.progress_size(), 2);
  EXPECT_EQ(status.progress(1).device(), 1);
  EXPECT_EQ(status.progress(1).completed_iterations(), 5);
}

TEST(OneflowdTest, CrashedWorkerFailsNamingSignalWithProgress) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  const SubmitResult result = SubmitAndWait(
      *stub, SubmitRequestFor("job-crash", FakeJobPlan("fake:crash_after=3", 1, 2), 0, daemon->address(), 10));
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  const proto::JobEvent* terminal = result.terminal();
  ASSERT_NE(terminal, nullptr);
  ASSERT_TRUE(terminal->has_failed());
  const proto::JobEvent::Failed& failed = terminal->failed();
  EXPECT_EQ(failed.reason(),
            absl::StrCat("node 0 worker (pid ", result.worker_pid(), ") was killed by signal 9 (Killed)"));
  EXPECT_EQ(failed.signal(), 9);
  EXPECT_EQ(failed.failed_rank(), 0);
  EXPECT_FALSE(failed.cancelled());
  ASSERT_EQ(failed.progress_size(), 2);
  EXPECT_EQ(failed.progress(1).device(), 1);
  EXPECT_EQ(failed.progress(1).completed_collectives(), 3 * testing::kCollectivesPerIteration);
  EXPECT_EQ(failed.progress(1).completed_iterations(), 3);
  EXPECT_EQ(&result.events.back(), terminal);

  proto::StatusRequest request;
  request.set_job_id("job-crash");
  proto::JobStatus status;
  ASSERT_TRUE(stub->Status(testing::Context().get(), request, &status).ok());
  EXPECT_EQ(status.state(), proto::JobStatus::FAILED);
  EXPECT_EQ(status.last_iteration(), 2);
  EXPECT_THAT(status.reason(), HasSubstr("signal 9"));
}

TEST(OneflowdTest, WorkerReasonsAndExitCodes) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  const SubmitResult said = SubmitAndWait(
      *stub, SubmitRequestFor("job-fail", FakeJobPlan("fake:fail=the disk is full", 1), 0, daemon->address()));
  ASSERT_NE(said.terminal(), nullptr);
  EXPECT_EQ(said.terminal()->failed().reason(), "the disk is full");
  EXPECT_EQ(said.terminal()->failed().exit_code(), 1);
  EXPECT_EQ(said.terminal()->failed().signal(), 0);

  const SubmitResult exited =
      SubmitAndWait(*stub, SubmitRequestFor("job-exit", FakeJobPlan("fake:exit=3", 1), 0, daemon->address()));
  ASSERT_NE(exited.terminal(), nullptr);
  EXPECT_EQ(exited.terminal()->failed().reason(),
            absl::StrCat("node 0 worker (pid ", exited.worker_pid(), ") exited with code 3"));
  EXPECT_EQ(exited.terminal()->failed().exit_code(), 3);

  const SubmitResult silent =
      SubmitAndWait(*stub, SubmitRequestFor("job-silent", FakeJobPlan("fake:exit=0", 1), 0, daemon->address()));
  ASSERT_NE(silent.terminal(), nullptr);
  EXPECT_THAT(silent.terminal()->failed().reason(), HasSubstr("exited with code 0 without reporting"));
}

TEST(OneflowdTest, RefusesBadRequestsBeforeStartingAWorker) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon({"--max_plan_bytes=4000"});
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  const proto::Plan good = FakeJobPlan("fake:finish", 2);
  struct Case {
    std::string what;
    proto::SubmitRequest request;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  {
    proto::Plan truncated = good;  // Lost its last device: collective 0 names a device with no plan.
    truncated.mutable_devices()->RemoveLast();
    ASSERT_TRUE(SealPlan(&truncated).ok());  // As a buggy tool would: only the verifier can tell.
    cases.push_back({"truncated", SubmitRequestFor("j", truncated, 0, daemon->address()),
                     grpc::StatusCode::INVALID_ARGUMENT,
                     "the plan fails verification: collective 0 (ALL_REDUCE of 'grad0', group [0:0, 1:0]) names "
                     "device 1:0, which has no device plan"});
  }
  {
    proto::Plan swapped = good;
    swapped.mutable_devices(1)->set_collective_order(0, 1);
    swapped.mutable_devices(1)->set_collective_order(1, 0);
    ASSERT_TRUE(SealPlan(&swapped).ok());
    cases.push_back({"unverifiable", SubmitRequestFor("j", swapped, 0, daemon->address()),
                     grpc::StatusCode::INVALID_ARGUMENT, "can deadlock"});
  }
  {
    proto::Plan damaged = good;  // Edited after it was sealed: the checksum no longer matches.
    damaged.mutable_devices(0)->mutable_actors(0)->set_name("grad0 all_reducf");
    cases.push_back({"damaged", SubmitRequestFor("j", damaged, 0, daemon->address()),
                     grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrFormat("the plan fails verification: plan checksum 0x%08x does not match its contents "
                                     "(0x%08x): the plan was damaged or edited after it was compiled",
                                     damaged.checksum(), *PlanChecksum(damaged))});
  }
  {
    // A compression field naming a codec this build lacks, resealed: the verifier, not the
    // worker's first act, must refuse it.
    proto::Plan codec = good;
    codec.mutable_boxings(0)->mutable_steps(0)->mutable_compression()->set_cross_node_kind(
        static_cast<proto::Compression::Kind>(9));
    ASSERT_TRUE(SealPlan(&codec).ok());
    cases.push_back({"damaged compression", SubmitRequestFor("j", codec, 0, daemon->address()),
                     grpc::StatusCode::INVALID_ARGUMENT,
                     "the plan fails verification: boxing 0 of 'grad0' ( -> ) step 0 (all_reduce) is compressed "
                     "across nodes with codec 9, which this build does not know"});
  }
  {
    proto::Plan version = good;
    version.set_format_version(0);
    cases.push_back({"not a plan", SubmitRequestFor("j", version, 0, daemon->address()),
                     grpc::StatusCode::INVALID_ARGUMENT, "plan format version 0"});
  }
  {
    proto::Plan big = good;
    big.mutable_job()->set_name(std::string(5000, 'x'));
    cases.push_back({"over --max_plan_bytes", SubmitRequestFor("j", big, 0, daemon->address()),
                     grpc::StatusCode::RESOURCE_EXHAUSTED, "over this daemon's --max_plan_bytes=4000"});
    big.mutable_job()->set_name(std::string(2 << 20, 'x'));
    cases.push_back({"over the gRPC limit", SubmitRequestFor("j", big, 0, daemon->address()),
                     grpc::StatusCode::RESOURCE_EXHAUSTED, "larger than max"});
  }
  cases.push_back({"rank", SubmitRequestFor("j", good, 2, daemon->address()), grpc::StatusCode::INVALID_ARGUMENT,
                   "node_rank 2 is outside the plan's cluster of 2 nodes (0..1)"});
  cases.push_back({"job id", SubmitRequestFor("../../etc", good, 0, daemon->address()),
                   grpc::StatusCode::INVALID_ARGUMENT, "job id '../../etc'"});
  cases.push_back({"iterations", SubmitRequestFor("j", good, 0, daemon->address(), 0),
                   grpc::StatusCode::INVALID_ARGUMENT, "options.iterations=0"});
  for (const Case& c : cases) {
    const SubmitResult result = SubmitAndWait(*stub, c.request);
    EXPECT_EQ(result.status.error_code(), c.code) << c.what << ": " << result.status.error_message();
    EXPECT_THAT(result.status.error_message(), HasSubstr(c.message)) << c.what;
    EXPECT_TRUE(result.events.empty()) << c.what;
  }
  // Nothing started, nothing written, and the daemon still serves.
  proto::ListResponse list;
  ASSERT_TRUE(stub->List(testing::Context().get(), proto::ListRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
  EXPECT_TRUE(std::filesystem::is_empty(daemon->work_dir()));
  proto::HealthResponse health;
  ASSERT_TRUE(stub->Health(testing::Context().get(), proto::HealthRequest(), &health).ok());
  EXPECT_THAT(health.version(), HasSubstr("oneflowd"));
}

TEST(OneflowdTest, RunningJobIdCannotBeSubmittedTwice) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  const proto::SubmitRequest request = SubmitRequestFor("job-dup", FakeJobPlan("fake:hang", 1), 0, daemon->address());
  SubmitResult first;
  std::thread runner([&] { first = SubmitAndWait(*stub, request); });
  // Wait until it runs.
  proto::HealthResponse health;
  for (int i = 0; i < 200 && health.running_jobs() == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(25));
    ASSERT_TRUE(stub->Health(testing::Context().get(), proto::HealthRequest(), &health).ok());
  }
  ASSERT_EQ(health.running_jobs(), 1);
  const SubmitResult second = SubmitAndWait(*stub, request);
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(second.status.error_message(), HasSubstr("job 'job-dup' is already running"));

  proto::ListResponse list;
  ASSERT_TRUE(stub->List(testing::Context().get(), proto::ListRequest(), &list).ok());
  ASSERT_EQ(list.jobs_size(), 1);
  EXPECT_EQ(list.jobs(0).state(), proto::JobStatus::RUNNING);

  proto::CancelRequest cancel;
  cancel.set_job_id("job-dup");
  proto::CancelResponse cancelled;
  ASSERT_TRUE(stub->Cancel(testing::Context().get(), cancel, &cancelled).ok());
  runner.join();
  ASSERT_NE(first.terminal(), nullptr);
  EXPECT_TRUE(first.terminal()->failed().cancelled());
  // Ended: the id may run again.
  const SubmitResult again =
      SubmitAndWait(*stub, SubmitRequestFor("job-dup", FakeJobPlan("fake:finish", 1), 0, daemon->address()));
  ASSERT_NE(again.terminal(), nullptr);
  EXPECT_TRUE(again.terminal()->has_finished());
}

TEST(OneflowdTest, EveryMethodOfBothServicesNeedsTheToken) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto launcher = testing::LauncherStub(daemon->address());
  auto rendezvous = testing::RendezvousStub(daemon->address());
  for (const std::string token : {"", "wrong-token"}) {
    std::vector<std::pair<std::string, grpc::Status>> calls;
    SubmitResult submit = SubmitAndWait(
        *launcher, SubmitRequestFor("job-auth", FakeJobPlan("fake:finish", 1), 0, daemon->address()), token);
    calls.push_back({"Submit", submit.status});
    EXPECT_TRUE(submit.events.empty());
    proto::CancelResponse cancel;
    calls.push_back({"Cancel", launcher->Cancel(testing::Context(token).get(), proto::CancelRequest(), &cancel)});
    proto::JobStatus status;
    calls.push_back({"Status", launcher->Status(testing::Context(token).get(), proto::StatusRequest(), &status)});
    proto::ListResponse list;
    calls.push_back({"List", launcher->List(testing::Context(token).get(), proto::ListRequest(), &list)});
    proto::HealthResponse health;
    calls.push_back({"Health", launcher->Health(testing::Context(token).get(), proto::HealthRequest(), &health)});
    proto::KvSetRequest set;
    set.set_job_id("j");
    set.set_key("k");
    proto::KvSetResponse set_response;
    calls.push_back({"KvSet", rendezvous->KvSet(testing::Context(token).get(), set, &set_response)});
    proto::KvGetRequest get;
    get.set_job_id("j");
    get.set_key("k");
    proto::KvGetResponse get_response;
    calls.push_back({"KvGet", rendezvous->KvGet(testing::Context(token).get(), get, &get_response)});
    proto::KvWaitRequest wait;
    wait.set_job_id("j");
    wait.add_keys("k");
    proto::KvWaitResponse wait_response;
    calls.push_back({"KvWait", rendezvous->KvWait(testing::Context(token).get(), wait, &wait_response)});
    proto::KvAddRequest add;
    add.set_job_id("j");
    add.set_key("k");
    proto::KvAddResponse add_response;
    calls.push_back({"KvAdd", rendezvous->KvAdd(testing::Context(token).get(), add, &add_response)});
    for (const auto& [method, result] : calls) {
      EXPECT_EQ(result.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method << " with token '" << token << "'";
    }
  }
  const std::string log = daemon->Stderr();
  EXPECT_THAT(log, HasSubstr("oneflowd: refused Launcher.Submit from ipv4:127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("refused Rendezvous.KvAdd from"));
  EXPECT_THAT(log, HasSubstr(": no authorization metadata"));
  EXPECT_THAT(log, HasSubstr(": wrong token"));
  proto::ListResponse list;
  ASSERT_TRUE(launcher->List(testing::Context().get(), proto::ListRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
}

TEST(OneflowdTest, TwoNodesMeetThroughTheFirstDaemonsRendezvous) {
  std::unique_ptr<DaemonProcess> node0 = StartDaemon();
  std::unique_ptr<DaemonProcess> node1 = StartDaemon();
  ASSERT_NE(node0, nullptr);
  ASSERT_NE(node1, nullptr);
  const proto::Plan plan = FakeJobPlan("fake:finish", 2);
  SubmitResult results[2];
  std::thread threads[2];
  for (int rank = 0; rank < 2; ++rank) {
    threads[rank] = std::thread([&, rank] {
      auto stub = testing::LauncherStub((rank == 0 ? node0 : node1)->address());
      results[rank] = SubmitAndWait(*stub, SubmitRequestFor("job-two", plan, rank, node0->address(), 3));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_NE(results[rank].terminal(), nullptr) << rank;
    EXPECT_TRUE(results[rank].terminal()->has_finished()) << results[rank].terminal()->DebugString();
    EXPECT_EQ(results[rank].terminal()->finished().progress(0).device(), rank);
  }
  // Both arrived at node 0's store.
  proto::KvGetRequest get;
  get.set_job_id("job-two");
  get.set_key("fake/arrived");
  proto::KvGetResponse value;
  ASSERT_TRUE(testing::RendezvousStub(node0->address())->KvGet(testing::Context().get(), get, &value).ok());
  EXPECT_EQ(value.value(), "2");
}

TEST(OneflowdTest, RefusesToStartWithoutAGoodTokenFile) {
  // An empty token file: the daemon exits 1 naming the file, before listening.
  const std::string directory = testing::TestDirectory("badtoken");
  const std::string empty = directory + "/empty";
  std::ofstream(empty) << "\n";
  std::filesystem::permissions(empty, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start("badtoken", {absl::StrCat("--token_file=", empty)});
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr(absl::StrCat("token file '", empty, "' is empty")));
  daemon = DaemonProcess::Start("badtoken", {"--token_file=/nonexistent/token"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr("token file '/nonexistent/token'"));
}

}  // namespace
}  // namespace oneflow::launcher
