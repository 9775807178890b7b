// Test helpers for the launcher: real `oneflowd` processes on 127.0.0.1 (port 0, the port
// read back from its "oneflowd listening on" line), a token file, and clients.
//
// Paths of the binaries are relative to the test's runfiles directory, so a test target
// lists them in `data`: //tools/launcher:oneflowd, //tools/launcher/testing:fake_worker.
#ifndef TOOLS_LAUNCHER_TESTING_DAEMON_PROCESS_H_
#define TOOLS_LAUNCHER_TESTING_DAEMON_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/files/file_descriptor.h"
#include "proto/launcher.grpc.pb.h"

namespace oneflow::launcher::testing {

inline constexpr char kDaemonBinary[] = "tools/launcher/oneflowd";
inline constexpr char kFakeWorkerBinary[] = "tools/launcher/testing/fake_worker";
inline constexpr char kTestToken[] = "test-token-7f3a9c";

// A fresh directory under TEST_TMPDIR.
std::string TestDirectory(const std::string& name);
// Writes `token` to a new file (mode 0600) and returns its path.
std::string WriteTokenFile(const std::string& token = kTestToken);

class DaemonProcess {
 public:
  // Starts oneflowd --listen=127.0.0.1:0 --token_file=<a file holding kTestToken>
  // --work_dir=<fresh> --worker_binary=<the fake worker>, then `extra_flags` (later flags
  // win). Waits (20 s at most) for its listening line.
  static absl::StatusOr<std::unique_ptr<DaemonProcess>> Start(const std::string& name,
                                                              std::vector<std::string> extra_flags = {});
  // SIGKILL if still running.
  ~DaemonProcess();

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  const std::string& work_dir() const { return work_dir_; }
  const std::string& token_file() const { return token_file_; }
  // What the daemon wrote to stderr so far.
  std::string Stderr() const;
  void Signal(int signal) const;
  // The daemon's wait status once it exited within `timeout`.
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  FileDescriptor stdout_fd_;
  std::string address_, work_dir_, token_file_, stderr_file_;
};

std::unique_ptr<proto::Launcher::Stub> LauncherStub(const std::string& address);
std::unique_ptr<proto::Rendezvous::Stub> RendezvousStub(const std::string& address);

// A client context carrying `token` (no token when empty) and a deadline.
std::unique_ptr<grpc::ClientContext> Context(const std::string& token = kTestToken,
                                             absl::Duration timeout = absl::Seconds(30));

// A SubmitRequest for `plan` on `node_rank`, rendezvous at `rendezvous`.
proto::SubmitRequest SubmitRequestFor(const std::string& job_id, const proto::Plan& plan, int64_t node_rank,
                                      const std::string& rendezvous, int64_t iterations = 5);

// Every event of a Submit stream, and how it ended.
struct SubmitResult {
  std::vector<proto::JobEvent> events;
  grpc::Status status;
  // The worker's pid from Started, 0 when none came.
  int64_t worker_pid() const;
  // The terminal event, or nullptr.
  const proto::JobEvent* terminal() const;
};
SubmitResult SubmitAndWait(proto::Launcher::Stub& stub, const proto::SubmitRequest& request,
                           const std::string& token = kTestToken);

// True when `pid` no longer exists: reaped, not even a zombie (/proc/PID is gone).
bool ProcessGone(pid_t pid);
// Polls ProcessGone for up to `timeout`.
bool WaitProcessGone(pid_t pid, absl::Duration timeout);

}  // namespace oneflow::launcher::testing

#endif  // TOOLS_LAUNCHER_TESTING_DAEMON_PROCESS_H_
