#include "tools/launcher/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace oneflow::launcher {
namespace {

// What the child failed at, sent with errno through the exec-error pipe.
enum ChildStep : int { kSetProcessGroup, kSetDeathSignal, kRedirect, kChangeDirectory, kExec };

const char* StepName(int step) {
  switch (step) {
    case kSetProcessGroup: return "setpgid";
    case kSetDeathSignal: return "prctl(PR_SET_PDEATHSIG)";
    case kRedirect: return "dup2";
    case kChangeDirectory: return "chdir to the job directory";
    default: return "exec";
  }
}

// Everything the child uses, prepared before fork: between fork and exec a child of a
// multi-threaded process may only make async-signal-safe calls (no malloc, no locks).
struct ChildSetup {
  pid_t parent;
  const char* binary;
  char* const* argv;
  const char* working_directory;
  int null_fd, output_fd, events_fd, error_fd;
  int max_fd;
};

[[noreturn]] void RunChild(const ChildSetup& setup) {
  auto fail = [&](int step) {
    const int message[2] = {step, errno};
    ssize_t ignored = write(setup.error_fd, message, sizeof(message));
    (void)ignored;
    _exit(127);
  };
  if (setpgid(0, 0) != 0) fail(kSetProcessGroup);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(kSetDeathSignal);
  // The daemon may have died between fork and prctl; then no signal will ever come.
  if (getppid() != setup.parent) _exit(126);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  for (int signal : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaction(signal, &default_action, nullptr);
  // The sources are all >= 10 (see SpawnWorker), so no dup2 here overwrites another's.
  if (dup2(setup.null_fd, STDIN_FILENO) < 0 || dup2(setup.output_fd, STDOUT_FILENO) < 0 ||
      dup2(setup.output_fd, STDERR_FILENO) < 0 || dup2(setup.events_fd, kWorkerEventsFd) < 0) {
    fail(kRedirect);
  }
  if (chdir(setup.working_directory) != 0) fail(kChangeDirectory);
  // Whatever else the daemon has open (sockets, pipes of other jobs, descriptors a
  // library opened without O_CLOEXEC) must not leak into the worker.
  if (syscall(SYS_close_range, kWorkerEventsFd + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = kWorkerEventsFd + 1; fd < setup.max_fd; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  execv(setup.binary, setup.argv);
  fail(kExec);
  _exit(127);  // Not reached.
}

// A close-on-exec duplicate numbered >= 10, replacing `fd`.
absl::Status RaiseDescriptor(FileDescriptor* fd) {
  const int raised = fcntl(fd->get(), F_DUPFD_CLOEXEC, 10);
  if (raised < 0) return absl::UnavailableError(absl::StrCat("fcntl(F_DUPFD_CLOEXEC): ", std::strerror(errno)));
  *fd = FileDescriptor(raised);
  return absl::OkStatus();
}

absl::Status MakePipe(FileDescriptor* read_end, FileDescriptor* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::UnavailableError(absl::StrCat("pipe2: ", std::strerror(errno)));
  *read_end = FileDescriptor(fds[0]);
  *write_end = FileDescriptor(fds[1]);
  absl::Status status = RaiseDescriptor(read_end);
  if (status.ok()) status = RaiseDescriptor(write_end);
  return status;
}

}  // namespace

absl::StatusOr<SpawnedWorker> SpawnWorker(const WorkerCommand& command) {
  const std::string where = absl::StrCat("cannot start worker '", command.binary, "'");
  std::vector<std::string> storage;
  storage.push_back(command.binary);
  storage.insert(storage.end(), command.arguments.begin(), command.arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : storage) argv.push_back(argument.data());
  argv.push_back(nullptr);

  FileDescriptor events_read, events_write, output_read, output_write, error_read, error_write;
  absl::Status status = MakePipe(&events_read, &events_write);
  if (status.ok()) status = MakePipe(&output_read, &output_write);
  if (status.ok()) status = MakePipe(&error_read, &error_write);
  FileDescriptor null_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (status.ok() && !null_fd.valid()) status = absl::UnavailableError(absl::StrCat("/dev/null: ", std::strerror(errno)));
  if (status.ok()) status = RaiseDescriptor(&null_fd);
  if (!status.ok()) return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));

  ChildSetup setup;
  setup.parent = getpid();
  setup.binary = storage[0].c_str();
  setup.argv = argv.data();
  setup.working_directory = command.working_directory.c_str();
  setup.null_fd = null_fd.get();
  setup.output_fd = output_write.get();
  setup.events_fd = events_write.get();
  setup.error_fd = error_write.get();
  setup.max_fd = static_cast<int>(std::clamp<long>(sysconf(_SC_OPEN_MAX), 64, 1 << 16));

  const pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError(absl::StrCat(where, ": fork: ", std::strerror(errno)));
  if (pid == 0) RunChild(setup);

  // Also here: whichever of parent and child runs first, the group exists before the
  // parent could signal it. (EACCES once the child has exec'd is harmless.)
  setpgid(pid, pid);
  events_write.Reset();
  output_write.Reset();
  error_write.Reset();
  int message[2];
  ssize_t got;
  do {
    got = read(error_read.get(), message, sizeof(message));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(message))) {
    int wait_status;
    while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    const absl::Status error = absl::Status(message[0] == kExec ? absl::StatusCode::kFailedPrecondition
                                                                : absl::StatusCode::kInternal,
                                            absl::StrCat(where, ": ", StepName(message[0]), ": ",
                                                         std::strerror(message[1])));
    return error;
  }
  // EOF: the exec succeeded (the pipe closed on exec).
  for (int fd : {events_read.get(), output_read.get()}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  SpawnedWorker worker;
  worker.pid = pid;
  worker.events = std::move(events_read);
  worker.output = std::move(output_read);
  return worker;
}

}  // namespace oneflow::launcher
