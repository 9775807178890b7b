#include "tools/cli/launch_command.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "actors/metrics.h"
#include "oneflow_core/status.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/plan_io.h"
#include "tools/launcher/launch_client.h"
#include "tools/launcher/metrics_proto.h"
#include "tools/launcher/signal_watcher.h"

// Shared with `oneflow run` (run_command.cc defines them).
ABSL_DECLARE_FLAG(int64_t, iters);
ABSL_DECLARE_FLAG(std::string, metrics);

ABSL_FLAG(double, collective_timeout_s, 0, "Seconds a collective may wait for its peers (0: the workers' default).");
ABSL_FLAG(std::string, job_id, "", "The job's id on every node (default: generated from the time).");

namespace oneflow::cli {
namespace {

// The session a signal should interrupt; the signal thread may fire before the session
// exists or after it is gone.
class InterruptTarget {
 public:
  void Set(launcher::LaunchSession* session) {
    absl::MutexLock lock(&mutex_);
    session_ = session;
    if (session_ != nullptr && pending_ != 0) session_->Interrupt(pending_);
  }
  void Signal(int signal) {
    absl::MutexLock lock(&mutex_);
    if (session_ != nullptr) {
      session_->Interrupt(signal);
    } else {
      pending_ = signal;
    }
  }

 private:
  absl::Mutex mutex_;
  launcher::LaunchSession* session_ ABSL_GUARDED_BY(mutex_) = nullptr;
  int pending_ ABSL_GUARDED_BY(mutex_) = 0;
};

absl::Status RunLaunch(const std::vector<std::string>& arguments, std::ostream& out) {
  // From here on, SIGINT/SIGTERM cancel the job rather than kill this process.
  InterruptTarget interrupt;
  launcher::SignalWatcher watcher({SIGINT, SIGTERM}, [&interrupt](int signal) { interrupt.Signal(signal); });

  launcher::LaunchOptions options;
  options.iterations = absl::GetFlag(FLAGS_iters);
  options.collective_timeout_s = absl::GetFlag(FLAGS_collective_timeout_s);
  options.job_id = absl::GetFlag(FLAGS_job_id);
  OF_ASSIGN_OR_RETURN(DaemonFlags daemons, ReadDaemonFlags());
  options.nodes = std::move(daemons.nodes);
  options.token = std::move(daemons.token);
  options.tls_ca_file = std::move(daemons.tls_ca_file);
  OF_ASSIGN_OR_RETURN(proto::Plan plan, ReadPlanFile(arguments[0]));

  OF_ASSIGN_OR_RETURN(std::unique_ptr<actors::MetricsReporter> reporter,
                      actors::MetricsReporter::Open(absl::GetFlag(FLAGS_metrics), options.iterations, &out,
                                                    isatty(STDOUT_FILENO)));
  // The merged metrics of every node, printed as `oneflow run` prints its own (the same
  // fields, compression included).
  options.on_metrics = [&](const proto::IterationMetrics& m) { reporter->Report(launcher::MetricsFromProto(m)); };
  options.on_log = [](int64_t node, const std::string& line) {
    std::fprintf(stderr, "[node %lld] %s\n", static_cast<long long>(node), line.c_str());
  };

  const size_t node_count = options.nodes.size();
  OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::LaunchSession> session,
                      launcher::LaunchSession::Create(std::move(plan), std::move(options)));
  std::fprintf(stderr, "oneflow launch: job '%s' on %zu nodes\n", session->job_id().c_str(), node_count);
  interrupt.Set(session.get());
  const absl::Status status = session->Run();
  interrupt.Set(nullptr);
  reporter->Finish();
  return status;
}

}  // namespace

Subcommand LaunchSubcommand() {
  Subcommand command;
  command.name = "launch";
  command.arguments = "PLAN";
  command.flag_usage =
      "--nodes=HOST:PORT,... --token_file=F [--iters=N] [--metrics=FILE] [--tls_ca=F] "
      "[--collective_timeout_s=S] [--job_id=ID]";
  command.summary = "run a plan on a cluster through the oneflowd daemons of its nodes";
  command.flags = {"nodes", "token_file", "iters", "metrics", "tls_ca", "collective_timeout_s", "job_id"};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunLaunch;
  return command;
}

}  // namespace oneflow::cli
