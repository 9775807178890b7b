// The client side of `oneflow launch`: submits a plan to one daemon per node and follows
// the job to its end (tools/cli/launch_command.cc is the flag handling around it).
//
// Node i's daemon gets node_rank i; the workers meet at node 0's daemon (the rendezvous)
// and bind to the host part of their own node's entry. The Submit streams run in
// parallel; per-node metrics merge into one line per iteration (metrics_merger.h);
// worker log lines go to on_log. The job succeeds only when every node reports
// Finished. On the first failure (a Failed event, a refused Submit, a stream that breaks:
// the daemon became unreachable) or an Interrupt, the job is cancelled on every node,
// their terminal events are awaited (cancel_wait at most), and Run returns one error that
// names the node and what happened, then every node's devices' last completed collective:
//
//   job 'j1' failed on node 1 (127.0.0.1:5002): node 1 worker (pid 4242) was killed by signal 9 (Killed)
//     node 0 (127.0.0.1:5001): cancelled
//       device 0 (0:0): last completed collective 6 (3 iterations)
//     node 1 (127.0.0.1:5002): failed
//       device 1 (1:0): last completed collective 5 (3 iterations)
#ifndef TOOLS_LAUNCHER_LAUNCH_CLIENT_H_
#define TOOLS_LAUNCHER_LAUNCH_CLIENT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/launcher.grpc.pb.h"
#include "proto/plan.pb.h"
#include "tools/launcher/progress_monitor.h"

namespace oneflow::launcher {

struct LaunchOptions {
  // host:port of each node's daemon, node 0 first; as many as the plan's nodes.
  std::vector<std::string> nodes;
  std::string token;
  // PEM certificate(s) to verify TLS daemons with; empty: plaintext.
  std::string tls_ca_file;
  // Empty: generated ("job-20240131-101500-1a2b3c").
  std::string job_id;
  int64_t iterations = 10;
  // Passed to the workers (0: their default).
  double collective_timeout_s = 0;
  // Checkpoints, passed to every worker (RunOptions; docs/checkpoints.md): absolute
  // paths every node reaches.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  std::string resume_from;
  // Retention, applied by the node completing each checkpoint (0 keeps all; RunOptions).
  int64_t keep_checkpoints = 0;
  int64_t keep_checkpoint_every = 0;
  // In-memory checkpoints (docs/elastic.md): the RunOptions fields memory_checkpoint_*
  // and memory_resume_*, merged into every node's Submit as they are (nothing else of
  // this message is used).
  proto::RunOptions memory_checkpoints;
  // The workers record their acts and send them after the last iteration (on_trace).
  bool record_trace = false;
  // `--transport=`: the workers' cross-node transport ("ucx", "gloo"); empty: their default.
  std::string transport;
  // `--communication_priority_levels=`: nice levels by which the workers' communication
  // threads lead their compute threads, in [0, 39]; -1: the workers' default.
  int64_t communication_priority_levels = -1;
  // `oneflow calibrate --nodes`: the workers measure the links instead of running the
  // plan (RunOptions.measure_links) and report them through on_link_measurements.
  bool measure_links = false;
  // After a failure, how long the other nodes get to report their end.
  absl::Duration cancel_wait = absl::Seconds(10);
  // Hang and slow-rank detection from the daemons' heartbeats (progress_monitor.h).
  // hang_seconds = 0 and slow_factor = 0: the daemons send no heartbeats.
  MonitorOptions monitor;
  // A hang found: fail the job (cancelled everywhere, the hang as its cause); false: warn.
  bool stop_on_hang = true;
  // On a failure, before cancelling the other nodes, fetch every node's flight recorder
  // dump (Launcher.Dump: running workers are asked for a fresh one); dumps() has them.
  bool collect_dumps = true;
  absl::Duration dump_timeout = absl::Seconds(3);
  // Called on Run's thread: each merged iteration, each worker output line.
  std::function<void(const proto::IterationMetrics& metrics)> on_metrics;
  std::function<void(int64_t node, const std::string& line)> on_log;
  // With record_trace: a node's recorded acts (one or more calls per node, before its end).
  std::function<void(int64_t node, const proto::JobEvent::TraceActs& acts)> on_trace;
  // With measure_links: a node's measurements (once per node, before its end).
  std::function<void(int64_t node, const proto::LinkMeasurements& measurements)> on_link_measurements;
  // A hang, the moment it is found (then, with stop_on_hang, the job is stopped and Run
  // returns it as the cause), and slow-rank warnings; one line each, from Run's thread.
  std::function<void(const std::string& line)> on_hang;
  std::function<void(const std::string& line)> on_warning;
  // The recoveries from lost nodes that led to this attempt (RunOptions.recoveries:
  // every daemon keeps them for `oneflow status`).
  std::vector<proto::Recovery> recoveries;
};

// A node's flight recorder dump fetched after a failure.
struct NodeDump {
  int64_t node = 0;
  std::string json;  // empty: none (note says why)
  std::string note;
};

class LaunchSession {
 public:
  // INVALID_ARGUMENT when the options do not fit the plan (the number of --nodes entries
  // against the plan's num_nodes, a malformed or repeated entry, a bad job id, a plan the
  // verifier refuses); the TLS CA file's errors. Connects to nothing yet.
  static absl::StatusOr<std::unique_ptr<LaunchSession>> Create(proto::Plan plan, LaunchOptions options);
  ~LaunchSession();

  const std::string& job_id() const { return options_.job_id; }

  // Runs the job to its end on every node (call once). OK only when every node finished.
  absl::Status Run();
  // Cancels the job on every node: Run then returns CANCELLED "job '...' cancelled by
  // signal N (...)". Any thread, any time (also before Run).
  void Interrupt(int signal);

  // After Run failed with collect_dumps: each started node's dump (or why there is none).
  const std::vector<NodeDump>& dumps() const { return dumps_; }

  // After Run failed: the node the failure came from (its Failed event, its broken or
  // refused stream), -1 when none did (a hang, an interrupt), and when the failure was
  // first seen (the start of a recovery's timeline).
  int64_t failed_node() const { return failed_node_; }
  absl::Time failed_at() const { return failed_at_; }

 private:
  struct Node;
  struct Item {
    enum Kind { kEvent, kStreamEnd, kInterrupt } kind;
    int64_t node = -1;
    proto::JobEvent event;
    grpc::Status status;
    int signal = 0;
  };

  LaunchSession(proto::Plan plan, LaunchOptions options);
  // Push waits while kMaxQueuedItems are queued (unless `wait_for_room` is false: the
  // stream's end and an interrupt always go in), so a Run loop that cannot keep up
  // slows the streams rather than growing the queue without bound.
  void Push(Item item, bool wait_for_room = false);
  std::optional<Item> Pop(absl::Time deadline);
  void Follow(Node* node);
  void CancelEverywhere();
  void CollectDumps();
  std::string NodeName(int64_t node) const;
  std::string Report(const std::string& headline) const;

  const proto::Plan plan_;
  LaunchOptions options_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::thread> cancellers_;
  std::vector<NodeDump> dumps_;
  int64_t failed_node_ = -1;
  absl::Time failed_at_ = absl::InfiniteFuture();

  std::mutex mutex_;
  std::condition_variable changed_;  // items_ or closing_ changed
  std::deque<Item> items_ ABSL_GUARDED_BY(mutex_);
  // Set by the destructor: followers waiting for room stop waiting.
  bool closing_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_LAUNCH_CLIENT_H_
