#include "tools/launcher/testing/daemon_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "tools/launcher/auth.h"

extern char** environ;

namespace oneflow::launcher::testing {

std::string TestDirectory(const std::string& name) {
  static std::atomic<int> counter{0};
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(root == nullptr ? "/tmp" : root, "/", name, "-", getpid(), "-", counter++);
  std::filesystem::create_directories(path);
  return path;
}

std::string WriteTokenFile(const std::string& token) {
  const std::string path = absl::StrCat(TestDirectory("token"), "/token");
  std::ofstream(path) << token << "\n";
  chmod(path.c_str(), 0600);
  return path;
}

absl::StatusOr<std::unique_ptr<DaemonProcess>> DaemonProcess::Start(const std::string& name,
                                                                    std::vector<std::string> extra_flags) {
  auto daemon = std::unique_ptr<DaemonProcess>(new DaemonProcess);
  const std::string directory = TestDirectory(name);
  daemon->work_dir_ = absl::StrCat(directory, "/work");
  daemon->token_file_ = WriteTokenFile();
  daemon->stderr_file_ = absl::StrCat(directory, "/stderr");
  std::vector<std::string> arguments = {kDaemonBinary, "--listen=127.0.0.1:0",
                                        absl::StrCat("--token_file=", daemon->token_file_),
                                        absl::StrCat("--work_dir=", daemon->work_dir_),
                                        absl::StrCat("--worker_binary=", kFakeWorkerBinary)};
  arguments.insert(arguments.end(), extra_flags.begin(), extra_flags.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, daemon->stderr_file_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int spawned = posix_spawn(&daemon->pid_, kDaemonBinary, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  daemon->stdout_fd_ = FileDescriptor(out[0]);
  if (spawned != 0) return absl::InternalError(absl::StrCat("posix_spawn oneflowd: ", std::strerror(spawned)));

  std::string line;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (line.find('\n') == std::string::npos) {
    const absl::Duration left = deadline - absl::Now();
    struct pollfd poll_fd = {out[0], POLLIN, 0};
    if (left <= absl::ZeroDuration() || poll(&poll_fd, 1, static_cast<int>(absl::ToInt64Milliseconds(left))) <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("oneflowd printed no listening line; stderr: ", daemon->Stderr()));
    }
    char buffer[256];
    const ssize_t got = read(out[0], buffer, sizeof(buffer));
    if (got <= 0) return absl::UnavailableError(absl::StrCat("oneflowd exited at start; stderr: ", daemon->Stderr()));
    line.append(buffer, static_cast<size_t>(got));
  }
  line = line.substr(0, line.find('\n'));
  constexpr char kPrefix[] = "oneflowd listening on ";
  if (!absl::StartsWith(line, kPrefix)) return absl::InternalError(absl::StrCat("unexpected first line: ", line));
  daemon->address_ = line.substr(sizeof(kPrefix) - 1);
  return daemon;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
}

std::string DaemonProcess::Stderr() const {
  std::ifstream file(stderr_file_);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void DaemonProcess::Signal(int signal) const { kill(pid_, signal); }

absl::StatusOr<int> DaemonProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return status;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError("oneflowd did not exit");
}

std::unique_ptr<proto::Launcher::Stub> LauncherStub(const std::string& address) {
  return proto::Launcher::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

std::unique_ptr<proto::Rendezvous::Stub> RendezvousStub(const std::string& address) {
  return proto::Rendezvous::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

std::unique_ptr<grpc::ClientContext> Context(const std::string& token, absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) AttachToken(context.get(), token);
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return context;
}

proto::SubmitRequest SubmitRequestFor(const std::string& job_id, const proto::Plan& plan, int64_t node_rank,
                                      const std::string& rendezvous, int64_t iterations) {
  proto::SubmitRequest request;
  request.set_job_id(job_id);
  *request.mutable_plan() = plan;
  request.set_node_rank(node_rank);
  request.mutable_options()->set_iterations(iterations);
  request.mutable_options()->set_collective_timeout_s(20);
  request.mutable_options()->set_rendezvous_address(rendezvous);
  return request;
}

int64_t SubmitResult::worker_pid() const {
  for (const proto::JobEvent& event : events) {
    if (event.has_started()) return event.started().worker_pid();
  }
  return 0;
}

const proto::JobEvent* SubmitResult::terminal() const {
  for (const proto::JobEvent& event : events) {
    if (event.has_finished() || event.has_failed()) return &event;
  }
  return nullptr;
}

SubmitResult SubmitAndWait(proto::Launcher::Stub& stub, const proto::SubmitRequest& request, const std::string& token) {
  std::unique_ptr<grpc::ClientContext> context = Context(token);
  std::unique_ptr<grpc::ClientReader<proto::JobEvent>> reader = stub.Submit(context.get(), request);
  SubmitResult result;
  proto::JobEvent event;
  while (reader->Read(&event)) result.events.push_back(event);
  result.status = reader->Finish();
  return result;
}

bool ProcessGone(pid_t pid) {
  struct stat info;
  return stat(absl::StrCat("/proc/", pid).c_str(), &info) != 0;
}

bool WaitProcessGone(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!ProcessGone(pid)) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

}  // namespace oneflow::launcher::testing
