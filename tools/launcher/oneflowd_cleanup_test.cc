// What oneflowd guarantees about worker processes: a cancelled, abandoned or orphaned
// worker is killed and never left behind (not even as a zombie).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/test_plans.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;
using testing::DaemonProcess;
using testing::FakeJobPlan;
using testing::SubmitRequestFor;

std::unique_ptr<DaemonProcess> StartDaemon() {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start("cleanup");
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

// A Submit stream read until the worker reported its first iteration.
struct RunningJob {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<proto::JobEvent>> reader;
  pid_t worker_pid = 0;

  // The rest of the stream: its terminal event (empty when none came) and status.
  std::pair<proto::JobEvent, grpc::Status> Finish() {
    proto::JobEvent event, terminal;
    while (reader->Read(&event)) {
      if (event.has_finished() || event.has_failed()) terminal = event;
    }
    return {terminal, reader->Finish()};
  }
};

RunningJob StartRunning(proto::Launcher::Stub& stub, const std::string& address, const std::string& behavior) {
  RunningJob job;
  job.context = testing::Context(testing::kTestToken, absl::Seconds(60));
  job.reader = stub.Submit(job.context.get(), SubmitRequestFor("job", FakeJobPlan(behavior, 1), 0, address));
  proto::JobEvent event;
  while (job.reader->Read(&event)) {
    if (event.has_started()) job.worker_pid = static_cast<pid_t>(event.started().worker_pid());
    if (event.has_metrics()) break;
  }
  return job;
}

proto::JobStatus StatusOf(proto::Launcher::Stub& stub, const std::string& job_id) {
  proto::StatusRequest request;
  request.set_job_id(job_id);
  proto::JobStatus status;
  EXPECT_TRUE(stub.Status(testing::Context().get(), request, &status).ok());
  return status;
}

// The job's status once it left RUNNING, or the last one seen after `timeout`. The daemon
// composes the terminal state right after it reaps the worker, so a test that saw the
// worker's pid disappear (and not the terminal event: its stream was cancelled) may ask
// in between and still read RUNNING.
proto::JobStatus SettledStatusOf(proto::Launcher::Stub& stub, const std::string& job_id, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  proto::JobStatus status = StatusOf(stub, job_id);
  while (status.state() == proto::JobStatus::RUNNING && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    status = StatusOf(stub, job_id);
  }
  return status;
}

TEST(OneflowdCleanupTest, CancelTerminatesAndReapsTheWorker) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  RunningJob job = StartRunning(*stub, daemon->address(), "fake:hang");
  ASSERT_GT(job.worker_pid, 0);
  EXPECT_EQ(StatusOf(*stub, "job").state(), proto::JobStatus::RUNNING);
  proto::CancelRequest cancel;
  cancel.set_job_id("job");
  proto::CancelResponse response;
  ASSERT_TRUE(stub->Cancel(testing::Context().get(), cancel, &response).ok());
  auto [terminal, status] = job.Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(terminal.has_failed());
  EXPECT_TRUE(terminal.failed().cancelled());
  EXPECT_EQ(terminal.failed().signal(), SIGTERM);
  EXPECT_EQ(terminal.failed().reason(), absl::StrCat("node 0 worker (pid ", job.worker_pid,
                                                     ") was cancelled (a Cancel call); it ended by signal 15 "
                                                     "(Terminated)"));
  ASSERT_EQ(terminal.failed().progress_size(), 1);
  EXPECT_EQ(terminal.failed().progress(0).completed_iterations(), 1);
  // Gone from /proc: reaped by the daemon, not a zombie.
  EXPECT_TRUE(testing::WaitProcessGone(job.worker_pid, absl::Seconds(5)));
  EXPECT_EQ(StatusOf(*stub, "job").state(), proto::JobStatus::CANCELLED);
  proto::CancelRequest unknown;
  unknown.set_job_id("no-such-job");
  EXPECT_EQ(stub->Cancel(testing::Context().get(), unknown, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(OneflowdCleanupTest, CancelEscalatesToSigkillAfterTheGrace) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  RunningJob job = StartRunning(*stub, daemon->address(), "fake:hang_ignore_term");
  ASSERT_GT(job.worker_pid, 0);
  proto::CancelRequest cancel;
  cancel.set_job_id("job");
  proto::CancelResponse response;
  const absl::Time start = absl::Now();
  ASSERT_TRUE(stub->Cancel(testing::Context().get(), cancel, &response).ok());
  auto [terminal, status] = job.Finish();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(terminal.has_failed());
  EXPECT_EQ(terminal.failed().signal(), SIGKILL);
  EXPECT_TRUE(terminal.failed().cancelled());
  EXPECT_GE(took, absl::Seconds(2.5));  // SIGTERM was ignored for the 3 s grace...
  EXPECT_LT(took, absl::Seconds(10));   // ...then SIGKILL.
  EXPECT_TRUE(testing::WaitProcessGone(job.worker_pid, absl::Seconds(5)));
}

TEST(OneflowdCleanupTest, ClientDisconnectCancelsTheJob) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  RunningJob job = StartRunning(*stub, daemon->address(), "fake:hang");
  ASSERT_GT(job.worker_pid, 0);
  job.context->TryCancel();
  job.Finish();
  EXPECT_TRUE(testing::WaitProcessGone(job.worker_pid, absl::Seconds(10)));
  const proto::JobStatus status = SettledStatusOf(*stub, "job", absl::Seconds(5));
  EXPECT_EQ(status.state(), proto::JobStatus::CANCELLED);
  EXPECT_THAT(status.reason(), HasSubstr("cancelled (the client went away)"));
}

TEST(OneflowdCleanupTest, WorkerDiesWithAKilledDaemon) {
  // Orphans are re-parented to this test process, which can then reap the worker and
  // see how it died.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  RunningJob job = StartRunning(*stub, daemon->address(), "fake:hang_ignore_term");
  ASSERT_GT(job.worker_pid, 0);
  daemon->Signal(SIGKILL);
  ASSERT_TRUE(daemon->Wait(absl::Seconds(5)).ok());
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 250 && reaped != job.worker_pid; ++i) {
    reaped = waitpid(job.worker_pid, &status, WNOHANG);
    if (reaped != job.worker_pid) absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(reaped, job.worker_pid) << "the worker outlived its daemon";
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);  // PR_SET_PDEATHSIG, though it ignores SIGTERM.
  job.context->TryCancel();
  job.Finish();
}

TEST(OneflowdCleanupTest, SigtermCancelsJobsAndExitsCleanly) {
  std::unique_ptr<DaemonProcess> daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  auto stub = testing::LauncherStub(daemon->address());
  RunningJob job = StartRunning(*stub, daemon->address(), "fake:hang");
  ASSERT_GT(job.worker_pid, 0);
  const absl::Time start = absl::Now();
  daemon->Signal(SIGTERM);
  auto [terminal, status] = job.Finish();
  ASSERT_TRUE(terminal.has_failed()) << status.error_message();
  EXPECT_THAT(terminal.failed().reason(), HasSubstr("cancelled (the daemon is shutting down)"));
  EXPECT_EQ(terminal.failed().signal(), SIGTERM) << terminal.failed().reason();
  absl::StatusOr<int> exit = daemon->Wait(absl::Seconds(15));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(WIFEXITED(*exit));
  EXPECT_EQ(WEXITSTATUS(*exit), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // SIGTERM's grace is not needed: it ended at once.
  EXPECT_TRUE(testing::ProcessGone(job.worker_pid));
  EXPECT_THAT(daemon->Stderr(), HasSubstr("signal 15: cancelling running jobs and shutting down"));

}

TEST(OneflowdCleanupTest, EndedJobsBeyondTheKeptOnesAreForgotten) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> started = DaemonProcess::Start("keep", {"--keep_jobs=1"});
  ASSERT_TRUE(started.ok()) << started.status();
  DaemonProcess& daemon = **started;
  auto stub = testing::LauncherStub(daemon.address());
  for (const char* id : {"first", "second", "third"}) {
    const auto result =
        testing::SubmitAndWait(*stub, SubmitRequestFor(id, FakeJobPlan("fake:finish", 1), 0, daemon.address(), 1));
    ASSERT_NE(result.terminal(), nullptr);
  }
  // At the third Submit, "first" was forgotten (only one ended job is kept besides).
  proto::ListResponse list;
  ASSERT_TRUE(stub->List(testing::Context().get(), proto::ListRequest(), &list).ok());
  std::vector<std::string> ids;
  for (const proto::JobStatus& job : list.jobs()) ids.push_back(job.job_id());
  EXPECT_EQ(ids, (std::vector<std::string>{"second", "third"}));
  EXPECT_FALSE(std::filesystem::exists(daemon.work_dir() + "/first"));
  EXPECT_TRUE(std::filesystem::exists(daemon.work_dir() + "/third/node0/worker.log"));
}

// Waits (5 s at most) until `path` is gone.
bool GoneWithin(const std::string& path) {
  for (int i = 0; i < 250 && std::filesystem::exists(path); ++i) absl::SleepFor(absl::Milliseconds(20));
  return !std::filesystem::exists(path);
}

std::vector<std::string> ListedIds(proto::Launcher::Stub& stub, proto::ListResponse* list) {
  EXPECT_TRUE(stub.List(testing::Context().get(), proto::ListRequest(), list).ok());
  std::vector<std::string> ids;
  for (const proto::JobStatus& job : list->jobs()) ids.push_back(job.job_id());
  return ids;
}

// With no Submit after it, a job that ends beyond --keep_jobs still goes (the janitor).
TEST(OneflowdCleanupTest, EndedJobsGoWithoutANewSubmit) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> started = DaemonProcess::Start("keep-idle", {"--keep_jobs=1"});
  ASSERT_TRUE(started.ok()) << started.status();
  DaemonProcess& daemon = **started;
  auto stub = testing::LauncherStub(daemon.address());
  for (const char* id : {"first", "second"}) {
    const auto result =
        testing::SubmitAndWait(*stub, SubmitRequestFor(id, FakeJobPlan("fake:finish", 1), 0, daemon.address(), 1));
    ASSERT_NE(result.terminal(), nullptr);
  }
  EXPECT_TRUE(GoneWithin(daemon.work_dir() + "/first"));
  EXPECT_TRUE(std::filesystem::exists(daemon.work_dir() + "/second/node0/worker.log"));
  proto::ListResponse list;
  EXPECT_EQ(ListedIds(*stub, &list), std::vector<std::string>{"second"});
  ASSERT_TRUE(list.has_keep_jobs());
  EXPECT_EQ(list.keep_jobs(), 1);
  EXPECT_EQ(list.keep_jobs_for_s(), 0);  // No age limit.
  EXPECT_EQ(list.work_dir(), std::filesystem::canonical(daemon.work_dir()).string());
}

TEST(OneflowdCleanupTest, EndedJobsGoAfterKeepJobsFor) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> started = DaemonProcess::Start("keep-for", {"--keep_jobs_for=2s"});
  ASSERT_TRUE(started.ok()) << started.status();
  DaemonProcess& daemon = **started;
  auto stub = testing::LauncherStub(daemon.address());
  const auto result =
      testing::SubmitAndWait(*stub, SubmitRequestFor("aged", FakeJobPlan("fake:finish", 1), 0, daemon.address(), 1));
  ASSERT_NE(result.terminal(), nullptr);
  proto::ListResponse list;
  // Kept at first (8 may be kept: the count does not remove it)...
  EXPECT_EQ(ListedIds(*stub, &list), std::vector<std::string>{"aged"});
  EXPECT_EQ(list.keep_jobs(), 8);
  EXPECT_EQ(list.keep_jobs_for_s(), 2);
  // ...and gone, record and directory, once 2 s passed since it ended.
  EXPECT_TRUE(GoneWithin(daemon.work_dir() + "/aged"));
  EXPECT_TRUE(ListedIds(*stub, &list).empty());
}

TEST(OneflowdCleanupTest, NegativeRetentionFlagsAreRefused) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start("keep-bad", {"--keep_jobs=-1"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr("--keep_jobs=-1 must be >= 0"));
  daemon = DaemonProcess::Start("keep-bad", {"--keep_jobs_for=-5s"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr("--keep_jobs_for=-5s must be >= 0"));
}

}  // namespace
}  // namespace oneflow::launcher
