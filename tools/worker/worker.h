// `oneflow_worker`: trains one node's share of a plan in this process, meeting the other
// nodes' workers through a rendezvous store. Started by a daemon (oneflowd, which passes
// --events_fd and --status_file: docs/launcher.md, "The worker contract") or by a
// scheduler from environment variables (environment.h).
#ifndef TOOLS_WORKER_WORKER_H_
#define TOOLS_WORKER_WORKER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/transport.h"
#include "actors/checkpoint/checkpoint_retention.h"
#include "actors/thread_priority.h"
#include "tools/worker/memory_checkpoints.h"

namespace oneflow::worker {

struct WorkerOptions {
  std::string plan_path;
  std::string job_id;
  int64_t node_rank = 0;
  int64_t iterations = 1;
  // host:port of the Rendezvous service; with `serve_rendezvous` this worker serves it
  // there itself (rank 0 of a job started without a daemon).
  std::string rendezvous_address;
  bool serve_rendezvous = false;
  // Without a daemon: the world size the scheduler gave, which must be the plan's number
  // of nodes (0: not checked). Such ranks also meet once more at the end, so rank 0's
  // rendezvous server outlives every rank's last use of it.
  int64_t world_size = 0;
  std::string token;  // Empty: calls carry no token (a server started without one).
  std::string tls_ca_file;
  absl::Duration collective_timeout = absl::Seconds(60);
  std::string worker_host = "127.0.0.1";
  // The transport of groups that span nodes (`--transport=`); every node must run the same
  // one (transport_agreement.h). It shows in every metrics line of a multi-node job.
  Transport transport = kDefaultTransport;
  // Nice levels by which this worker's communication threads lead its compute threads
  // (`--communication_priority_levels`, actors/thread_priority.h; 0: off). It shows in
  // every metrics line.
  int64_t communication_priority_levels = actors::kCommunicationPriorityLevels;
  int events_fd = -1;        // Length-delimited JobEvents to the daemon; < 0: none.
  std::string status_file;   // Empty: none.
  std::string metrics_path;  // JSON lines here ("-": stdout; empty: none).
  // Checkpoints (docs/checkpoints.md): this node's shards into checkpoint_dir every
  // checkpoint_every iterations, the nodes agreeing through the rendezvous store; the
  // run starts from resume_from when set.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  std::string resume_from;
  // In-memory checkpoints and the resume from them (docs/elastic.md).
  MemoryCheckpointSettings memory_checkpoints;
  // Which older checkpoints this node deletes when it completes one (its protected_dir
  // is set by the runtime).
  actors::RetentionPolicy retention;
  // Record every act and send them on the events pipe after the last iteration
  // (JobEvent.trace), for `oneflow launch --trace`.
  bool record_trace = false;
  // `oneflow calibrate --nodes`: measure the links instead of running the plan
  // (link_measurement.h), send them as JobEvent.link_measurements, and finish.
  bool measure_links = false;
  // Where the flight recorder dump flight-node<N>.json goes (on the run's first error
  // and on SIGUSR1); empty: the working directory.
  std::string flight_dump_dir;
  // After the first error, the longest the worker waits for its threads to stop before
  // it exits anyway (a thread blocked in a transport that cannot be interrupted).
  absl::Duration exit_deadline = absl::Seconds(3);
};

// Runs the job to the end. Returns the run's error, whose message names this node; the
// daemon has already been told through the events pipe.
absl::Status RunWorker(const WorkerOptions& options);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_WORKER_H_
