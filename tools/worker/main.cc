// `oneflow_worker`: one node's worker process. Started by oneflowd with the flags of the
// worker contract (docs/launcher.md), or by a scheduler with only --plan and --iters and
// the rank, world size and rendezvous address in the environment (environment.h):
//
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 oneflow_worker --plan=p.pb --iters=20 &
//   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 oneflow_worker --plan=p.pb --iters=20
//
// Exit codes: 0 the job finished; 1 it failed (the reason on stderr and, under a daemon,
// in the events pipe); 2 bad flags or environment.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_retention.h"
#include "actors/thread_priority.h"
#include "kernels/cpu/blas_core.h"
#include "tools/worker/environment.h"
#include "tools/worker/worker.h"

ABSL_FLAG(std::string, plan, "", "The plan file (binary Plan).");
ABSL_FLAG(std::string, job_id, "", "The job's id: scopes its rendezvous keys.");
ABSL_FLAG(int64_t, node_rank, -1, "This worker's node in the plan (daemon mode).");
ABSL_FLAG(int64_t, iters, 10, "Iterations to train.");
ABSL_FLAG(std::string, rendezvous, "", "host:port of the Rendezvous service (daemon mode).");
ABSL_FLAG(std::string, token_file, "", "File holding the shared token for the Rendezvous service.");
ABSL_FLAG(std::string, tls_ca, "", "CA certificate to verify the Rendezvous service's TLS certificate.");
ABSL_FLAG(double, collective_timeout_s, 0, "Seconds a collective may wait for its peers (0: 60).");
ABSL_FLAG(std::string, worker_host, "", "Address Gloo binds for connections to the other nodes (--transport=gloo).");
ABSL_FLAG(std::string, transport, "",
          "Transport of the groups that span nodes: ucx (default: shared memory within a host, TCP across hosts) "
          "or gloo (TCP). Every node must use the same.");
ABSL_FLAG(int64_t, communication_priority_levels, oneflow::actors::kCommunicationPriorityLevels,
          "Nice levels by which this worker's communication threads lead its compute threads, in [0, 39] "
          "(0: every thread at the worker's nice value; on a kernel with per-thread slices, Linux 6.12 and "
          "later, any N > 0 is a short slice at one nice value instead, docs/runtime.md); recorded in the "
          "metrics lines.");
ABSL_FLAG(int32_t, events_fd, -1, "Pipe to the daemon: length-delimited JobEvents (daemon mode).");
ABSL_FLAG(std::string, status_file, "", "Per-device progress file the daemon reads (daemon mode).");
ABSL_FLAG(std::string, metrics, "",
          "JSON lines per iteration here; default without a daemon: stdout on rank 0.");

ABSL_FLAG(std::string, checkpoint_dir, "",
          "Save this node's shards into DIR/iter-N every --checkpoint_every iterations (docs/checkpoints.md); DIR "
          "must be reachable from every node.");
ABSL_FLAG(bool, record_trace, false,
          "Record every act and send them to the daemon (--events_fd) after the last iteration, for `oneflow "
          "launch --trace`.");
ABSL_FLAG(bool, measure_links, false,
          "Measure the links (alpha, beta) within this node and between the job's nodes instead of running the "
          "plan, for `oneflow calibrate --nodes` (daemon mode).");
ABSL_FLAG(int64_t, checkpoint_every, 0, "With --checkpoint_dir: save after every N-th iteration (N >= 1).");
ABSL_FLAG(int64_t, keep_checkpoints, oneflow::actors::kDefaultKeepCheckpoints,
          "Keep the newest N complete checkpoints, deleting older ones once a newer one verifies (0 keeps all); "
          "only the node completing a checkpoint deletes.");
ABSL_FLAG(int64_t, keep_checkpoint_every, 0, "Checkpoints whose iteration is a multiple of N are kept besides.");
ABSL_FLAG(std::string, resume_from, "", "Start from this checkpoint, or the newest complete one under this directory.");
ABSL_FLAG(int64_t, memory_checkpoint_every, 0,
          "In-memory checkpoints (docs/elastic.md): every N iterations put this node's shards on its daemon and "
          "on the next node's (0: none).");
ABSL_FLAG(std::string, memory_checkpoint_scope, "", "Whose in-memory checkpoints: the launch's job id.");
ABSL_FLAG(std::vector<std::string>, memory_checkpoint_daemons, {},
          "HOST:PORT of every node's daemon, in node order, for --memory_checkpoint_every.");
ABSL_FLAG(int64_t, memory_resume_iteration, 0,
          "Resume from the in-memory checkpoint after N iterations (0: not; --resume_from then applies).");
ABSL_FLAG(std::vector<std::string>, memory_resume_holders, {},
          "For --memory_resume_iteration: the daemon holding each node's part, in node order (empty: none).");

namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "oneflow_worker: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  // Peers that vanish must surface as errors of the collective, not kill the worker.
  std::signal(SIGPIPE, SIG_IGN);
  oneflow::worker::WorkerOptions options;
  options.plan_path = absl::GetFlag(FLAGS_plan);
  if (options.plan_path.empty()) return Usage("--plan=FILE is required");
  options.iterations = absl::GetFlag(FLAGS_iters);
  const double timeout = absl::GetFlag(FLAGS_collective_timeout_s);
  if (timeout < 0) return Usage(absl::StrCat("--collective_timeout_s=", timeout, " must be >= 0"));
  if (timeout > 0) options.collective_timeout = absl::Seconds(timeout);
  if (const std::string transport = absl::GetFlag(FLAGS_transport); !transport.empty()) {
    const absl::StatusOr<oneflow::Transport> parsed = oneflow::ParseTransport(transport);
    if (!parsed.ok()) return Usage(absl::StrCat("--transport: ", parsed.status().message()));
    options.transport = *parsed;
  }
  options.communication_priority_levels = absl::GetFlag(FLAGS_communication_priority_levels);
  if (absl::Status status = oneflow::actors::ValidateCommunicationPriorityLevels(options.communication_priority_levels,
                                                                                "--communication_priority_levels");
      !status.ok()) {
    return Usage(std::string(status.message()));
  }
  options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.events_fd = absl::GetFlag(FLAGS_events_fd);
  options.status_file = absl::GetFlag(FLAGS_status_file);
  options.metrics_path = absl::GetFlag(FLAGS_metrics);
  options.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  options.resume_from = absl::GetFlag(FLAGS_resume_from);
  options.memory_checkpoints.every = absl::GetFlag(FLAGS_memory_checkpoint_every);
  options.memory_checkpoints.scope = absl::GetFlag(FLAGS_memory_checkpoint_scope);
  options.memory_checkpoints.daemons = absl::GetFlag(FLAGS_memory_checkpoint_daemons);
  options.memory_checkpoints.resume_iteration = absl::GetFlag(FLAGS_memory_resume_iteration);
  options.memory_checkpoints.resume_holders = absl::GetFlag(FLAGS_memory_resume_holders);
  if (options.memory_checkpoints.every < 0 || options.memory_checkpoints.resume_iteration < 0) {
    return Usage("--memory_checkpoint_every and --memory_resume_iteration must be >= 0");
  }
  options.retention.keep_last = absl::GetFlag(FLAGS_keep_checkpoints);
  options.retention.keep_every = absl::GetFlag(FLAGS_keep_checkpoint_every);
  options.record_trace = absl::GetFlag(FLAGS_record_trace);
  options.measure_links = absl::GetFlag(FLAGS_measure_links);
  std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (options.events_fd >= 0 || absl::GetFlag(FLAGS_node_rank) >= 0) {
    // Started by a daemon: everything comes from flags.
    options.node_rank = absl::GetFlag(FLAGS_node_rank);
    options.job_id = absl::GetFlag(FLAGS_job_id);
    options.rendezvous_address = absl::GetFlag(FLAGS_rendezvous);
    options.worker_host = absl::GetFlag(FLAGS_worker_host);
    if (options.worker_host.empty()) options.worker_host = "127.0.0.1";
    if (options.node_rank < 0) return Usage("--node_rank=N is required with --events_fd");
    if (options.job_id.empty()) return Usage("--job_id=ID is required with --node_rank");
  } else {
    absl::StatusOr<oneflow::worker::WorkerEnvironment> environment =
        oneflow::worker::ReadWorkerEnvironment([](const char* name) { return std::getenv(name); });
    if (!environment.ok()) {
      return Usage(absl::StrCat(environment.status().message(),
                                "; without a daemon the worker needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"));
    }
    options.node_rank = environment->rank;
    options.job_id = environment->job_id;
    options.rendezvous_address = environment->rendezvous_address;
    options.serve_rendezvous = environment->rank == 0;
    options.world_size = environment->world_size;
    options.worker_host = environment->worker_host;
    if (options.metrics_path.empty() && environment->rank == 0) options.metrics_path = "-";
    if (token_file.empty() && std::getenv("ONEFLOW_TOKEN_FILE") != nullptr) token_file = std::getenv("ONEFLOW_TOKEN_FILE");
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return Usage(absl::StrCat("--token_file='", token_file, "': cannot open"));
    std::stringstream text;
    text << in.rdbuf();
    options.token = std::string(absl::StripAsciiWhitespace(text.str()));
    if (options.token.empty()) return Usage(absl::StrCat("--token_file='", token_file, "' is empty"));
  }
  if (options.token.empty() && options.events_fd < 0) {
    // Without a daemon and without ONEFLOW_TOKEN_FILE: a token every rank of this job
    // derives alike. It keeps jobs sharing a port from mixing, but it is no secret: set
    // ONEFLOW_TOKEN_FILE on shared machines (docs/launcher.md).
    options.token = absl::StrCat("oneflow-job:", options.job_id, "@", options.rendezvous_address);
  }
  const absl::Status status = oneflow::worker::RunWorker(options);
  if (!status.ok()) {
    std::fprintf(stderr, "oneflow_worker: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
