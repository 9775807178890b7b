// The client side of `oneflow list`, `oneflow status JOB`, `oneflow cancel JOB` and
// `oneflow diagnose --nodes=... JOB` (Launcher.Dump): the
// same call to every node's daemon at once (Launcher.List, Status, Cancel), each node's
// answer or its failure kept apart, so a command can print what the reachable nodes said
// and still fail for the others (tools/cli/job_commands.cc prints them).
//
// A failure reads as in `oneflow launch` (daemon_client.h): "node 1 (ADDR) is
// unreachable: ..." (down, TLS mismatch), "node 1 (ADDR) refused the request:
// Launcher.List: wrong token; ..."; an unknown job: "node 1 (ADDR): no job 'ID' on this
// daemon (...)".
#ifndef TOOLS_LAUNCHER_JOB_CONTROL_H_
#define TOOLS_LAUNCHER_JOB_CONTROL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/launcher.pb.h"
#include "tools/launcher/daemon_client.h"

namespace oneflow::launcher {

struct JobControlOptions {
  // host:port of each node's daemon, node 0 first (`oneflow launch`'s --nodes).
  std::vector<std::string> nodes;
  std::string token;
  // PEM certificate(s) to verify TLS daemons with; empty: plaintext.
  std::string tls_ca_file;
  // The longest any one call may take.
  absl::Duration call_timeout = absl::Seconds(10);
  // How long Cancel waits for the job to end on every node: a daemon gives a cancelled
  // worker 3 s before SIGKILL, then reaps it.
  absl::Duration cancel_wait = absl::Seconds(10);
};

// What one node's daemon answered.
struct NodeAnswer {
  int64_t rank = 0;
  std::string address;
  // OK, or why this node has no answer, in the words above.
  absl::Status error;
  // List: every job the daemon knows; Status and Cancel: the job asked about.
  std::vector<proto::JobStatus> jobs;
  // Dump: the node's flight recorder dump (its dump_json empty when none, note says why).
  proto::DumpResponse dump;
  // List: what the daemon keeps of ended jobs (ListResponse's keep_jobs, keep_jobs_for_s,
  // work_dir; keep_jobs unset from a daemon that does not say).
  proto::ListResponse retention;
};

// The failures among `answers` as one status: OK when there are none; else the first
// failure's code and every failure's message, one per line (the later ones indented).
absl::Status FailuresOf(const std::vector<NodeAnswer>& answers);

class JobControl {
 public:
  // INVALID_ARGUMENT for a bad --nodes list (ConnectToDaemons) or no token. Connects to
  // nothing yet.
  static absl::StatusOr<std::unique_ptr<JobControl>> Create(JobControlOptions options);

  // Every node's jobs, in node order.
  std::vector<NodeAnswer> List();
  // `job_id` on every node. INVALID_ARGUMENT for an id no job can have.
  absl::StatusOr<std::vector<NodeAnswer>> Status(const std::string& job_id);
  // Cancels `job_id` on every node, then waits until it ended everywhere (its workers
  // reaped) and returns its final status per node. A job that had already ended is left
  // as it was. A node where it still runs after cancel_wait: DEADLINE_EXCEEDED naming it.
  absl::StatusOr<std::vector<NodeAnswer>> Cancel(const std::string& job_id);
  // Every node's flight recorder dump of `job_id` (Launcher.Dump): a running worker is
  // asked for a fresh one and given `timeout` to write it.
  absl::StatusOr<std::vector<NodeAnswer>> Dump(const std::string& job_id, absl::Duration timeout);

 private:
  explicit JobControl(JobControlOptions options, std::vector<DaemonNode> daemons)
      : options_(std::move(options)), daemons_(std::move(daemons)) {}

  const JobControlOptions options_;
  std::vector<DaemonNode> daemons_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_JOB_CONTROL_H_
