// `oneflowd`: the launcher daemon, one per node. Serves Launcher (start this node's
// worker for a job, stream its events) and Rendezvous (the key-value store the workers of
// a job meet through) on one port; every call must carry the token of --token_file.
//
//   oneflowd --listen=HOST:PORT --token_file=F [--work_dir=DIR] [--worker_binary=PATH]
//            [--max_plan_bytes=N] [--tls_cert=F --tls_key=F [--tls_ca=F]] [--keep_jobs=N]
//            [--keep_jobs_for=DURATION]
//
// Prints "oneflowd listening on HOST:PORT" on stdout once serving (the port resolved when
// 0 was given). SIGINT/SIGTERM: cancels every job, waits for the workers (at most the
// cancel grace, 3 s, plus a little), and exits 0; a second signal exits at once (the
// workers then die with the daemon, by PR_SET_PDEATHSIG). docs/launcher.md is the
// operator's page.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tools/launcher/address.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/launcher_service.h"
#include "tools/launcher/memory_checkpoint_service.h"
#include "tools/launcher/rendezvous_service.h"
#include "tools/launcher/server.h"
#include "tools/launcher/signal_watcher.h"
#include "tools/launcher/worker_binary.h"

ABSL_FLAG(std::string, listen, "", "HOST:PORT to serve on (port 0: any free port, printed at start).");
ABSL_FLAG(std::string, token_file, "",
          "File holding the cluster's shared secret (not readable by other users); every call must carry it.");
ABSL_FLAG(std::string, work_dir, "", "Directory for jobs' plans, status files and logs; default /tmp/oneflowd-UID.");
ABSL_FLAG(std::string, worker_binary, "",
          "The worker program; default: oneflow_worker next to oneflowd, else ../worker/oneflow_worker.");
ABSL_FLAG(int64_t, max_plan_bytes, int64_t{512} << 20, "Largest plan a Submit may carry, in bytes.");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate: serve TLS (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM certificate workers verify the rendezvous daemon with; default: --tls_cert (one self-signed "
          "certificate shared by the cluster's daemons).");
ABSL_FLAG(int32_t, keep_jobs, 8,
          "Ended jobs whose records and directories (plan, status file, worker.log, flight recorder dump) are "
          "kept for debugging: the newest N; older ones are removed (0: none kept).");
ABSL_FLAG(absl::Duration, keep_jobs_for, absl::InfiniteDuration(),
          "Remove an ended job's record and directory this long after it ended, even within --keep_jobs "
          "(e.g. 72h; inf: no age limit).");

ABSL_FLAG(int64_t, memory_checkpoint_limit_bytes, 0,
          "Bytes of in-memory checkpoints (`oneflow launch --memory_checkpoint_every`) this daemon holds at most, "
          "over every launch: a part that would go above it is refused, naming this limit, and the launch resumes "
          "from an older or a disk checkpoint (0: no limit; docs/elastic.md).");
ABSL_FLAG(absl::Duration, memory_checkpoint_idle, absl::Minutes(30),
          "Drop a launch's in-memory checkpoints once none of them was put, listed or fetched for this long "
          "(a launch killed before it could drop them), at the next in-memory checkpoint call of any launch "
          "(inf: never).");

namespace oneflow::launcher {
namespace {

// Room for the rest of a SubmitRequest around the plan.
constexpr int64_t kRequestOverheadBytes = 1 << 20;
// How long the server gives calls in flight once the jobs are gone.
constexpr std::chrono::seconds kShutdownGrace(2);

std::string AbsolutePath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) == nullptr ? path : std::string(resolved);
}

absl::StatusOr<std::string> PrepareWorkDirectory(std::string path) {
  if (path.empty()) path = absl::StrCat("/tmp/oneflowd-", getuid());
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return absl::UnavailableError(absl::StrCat("--work_dir='", path, "': cannot create: ", error.message()));
  chmod(path.c_str(), 0700);  // Plans are the user's; other users have no business reading them.
  if (access(path.c_str(), W_OK | X_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("--work_dir='", path, "': ", std::strerror(errno)));
  }
  return AbsolutePath(path);
}

absl::Status Serve(const absl::Notification& stop, const std::atomic<int>& stop_signal) {
  const std::string listen = absl::GetFlag(FLAGS_listen);
  if (listen.empty()) return absl::InvalidArgumentError("--listen=HOST:PORT is required (e.g. 0.0.0.0:5001)");
  absl::StatusOr<HostPort> listen_address = ParseHostPort(listen, "--listen");
  if (!listen_address.ok()) return listen_address.status();
  absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
  if (!token.ok()) return token.status();
  const int64_t max_plan_bytes = absl::GetFlag(FLAGS_max_plan_bytes);
  if (max_plan_bytes < 1 || max_plan_bytes > INT_MAX - kRequestOverheadBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--max_plan_bytes=", max_plan_bytes, " is not in 1..",
                                                   INT_MAX - kRequestOverheadBytes, " (gRPC's 2 GiB limit)"));
  }
  absl::StatusOr<std::string> work_dir = PrepareWorkDirectory(absl::GetFlag(FLAGS_work_dir));
  if (!work_dir.ok()) return work_dir.status();

  LauncherOptions options;
  options.work_dir = *work_dir;
  options.worker_binary = FindWorkerBinary(absl::GetFlag(FLAGS_worker_binary));
  if (!options.worker_binary.ok()) {
    if (!absl::GetFlag(FLAGS_worker_binary).empty()) return options.worker_binary.status();
    std::fprintf(stderr, "oneflowd: warning: %s; every Submit will fail until then\n",
                 std::string(options.worker_binary.status().message()).c_str());
  }
  options.max_plan_bytes = max_plan_bytes;
  options.token_file = AbsolutePath(absl::GetFlag(FLAGS_token_file));
  const std::string tls_ca = absl::GetFlag(FLAGS_tls_ca).empty() ? absl::GetFlag(FLAGS_tls_cert) : absl::GetFlag(FLAGS_tls_ca);
  options.worker_tls_ca = tls_ca.empty() ? "" : AbsolutePath(tls_ca);
  options.listen_host = listen_address->host;
  options.keep_finished_jobs = absl::GetFlag(FLAGS_keep_jobs);
  if (options.keep_finished_jobs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--keep_jobs=", options.keep_finished_jobs, " must be >= 0 (0 keeps no ended job)"));
  }
  options.keep_finished_for = absl::GetFlag(FLAGS_keep_jobs_for);
  if (options.keep_finished_for < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--keep_jobs_for=", absl::FormatDuration(options.keep_finished_for),
                                                   " must be >= 0 (inf: no age limit)"));
  }

  auto authorizer = std::make_shared<TokenAuthorizer>(*token, "oneflowd");
  RendezvousService rendezvous(authorizer);
  LauncherService launcher(options, authorizer, &rendezvous.store());
  // In-memory checkpoints of the jobs' workers and replicas of the previous node's
  // (docs/elastic.md): kept here so that they outlive a worker.
  MemoryCheckpointLimits memory_limits;
  memory_limits.limit_bytes = absl::GetFlag(FLAGS_memory_checkpoint_limit_bytes);
  memory_limits.idle = absl::GetFlag(FLAGS_memory_checkpoint_idle);
  if (memory_limits.limit_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_checkpoint_limit_bytes=", memory_limits.limit_bytes,
                                                   " must be >= 0 (0: no limit)"));
  }
  if (memory_limits.idle <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_checkpoint_idle=",
                                                   absl::FormatDuration(memory_limits.idle),
                                                   " must be above 0 (inf: never drop idle checkpoints)"));
  }
  memory_limits.log = [](const std::string& line) {
    std::fprintf(stderr, "oneflowd: %s\n", line.c_str());
    std::fflush(stderr);
  };
  MemoryCheckpointService memory_checkpoints(authorizer, memory_limits);
  ServerOptions server_options;
  server_options.address = listen;
  server_options.token = *token;
  server_options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  server_options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  server_options.max_receive_bytes = max_plan_bytes + kRequestOverheadBytes;
  server_options.log_name = "oneflowd";
  absl::StatusOr<StartedServer> server = StartGrpcServer(server_options, {&launcher, &rendezvous, &memory_checkpoints});
  if (!server.ok()) return server.status();

  std::fprintf(stderr, "oneflowd: work directory %s; worker %s; %s\n", options.work_dir.c_str(),
               options.worker_binary.ok() ? options.worker_binary->c_str() : "(none)",
               server_options.tls_cert_file.empty() ? "plaintext" : "TLS");
  std::printf("oneflowd listening on %s\n", server->address.c_str());
  std::fflush(stdout);

  stop.WaitForNotification();
  std::fprintf(stderr, "oneflowd: signal %d: cancelling running jobs and shutting down\n", stop_signal.load());
  launcher.Shutdown();
  rendezvous.store().Shutdown();
  // Every job has ended and every rendezvous wait returned, so what is left is a Submit
  // stream flushing its last event. After the deadline gRPC closes the connections
  // instead of waiting for idle clients to acknowledge its goodbye (a client that is not
  // in a call polls its socket only every few seconds).
  server->server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->server->Wait();
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow::launcher

int main(int argc, char** argv) {
  using oneflow::launcher::SignalWatcher;
  absl::SetProgramUsageMessage(
      "the oneflow launcher daemon: oneflowd --listen=HOST:PORT --token_file=F [--work_dir=DIR] "
      "[--worker_binary=PATH] [--max_plan_bytes=N] [--tls_cert=F --tls_key=F [--tls_ca=F]] [--keep_jobs=N] "
      "[--keep_jobs_for=DURATION]");
  absl::Notification stop;
  std::atomic<int> stop_signal{0};
  SignalWatcher watcher({SIGINT, SIGTERM}, [&](int signal) {
    if (stop.HasBeenNotified()) {
      std::fprintf(stderr, "oneflowd: second signal %d: exiting now\n", signal);
      std::_Exit(1);
    }
    stop_signal.store(signal);
    stop.Notify();
  });
  // A worker or client that vanished must not kill the daemon through a write.
  signal(SIGPIPE, SIG_IGN);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "oneflowd: unexpected argument '%s'; everything is a --flag (see --help)\n", positional[1]);
    return 2;
  }
  const absl::Status status = oneflow::launcher::Serve(stop, stop_signal);
  if (!status.ok()) {
    std::fprintf(stderr, "oneflowd: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
