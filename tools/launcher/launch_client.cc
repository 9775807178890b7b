#include "tools/launcher/launch_client.h"

#include <signal.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/thread_priority.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "oneflow_core/wait_until.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/comm/transport_name.h"
#include "grpcpp/client_context.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/daemon_client.h"
#include "tools/launcher/metrics_merger.h"
#include "tools/launcher/submit_validation.h"

namespace oneflow::launcher {
namespace {

constexpr absl::Duration kCancelCallTimeout = absl::Seconds(5);
// Events the nodes' streams may have queued for Run at once (a few MB at most).
constexpr size_t kMaxQueuedItems = 10000;

std::string GenerateJobId() {
  std::random_device random;
  return absl::StrCat("job-", absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()), "-",
                      absl::StrFormat("%06x", random() & 0xffffff));
}

std::string SignalText(int signal) {
  const char* name = strsignal(signal);
  return absl::StrCat("signal ", signal, " (", name == nullptr ? "unknown" : name, ")");
}

}  // namespace

// One node's daemon and what it told us.
struct LaunchSession::Node {
  int64_t rank = 0;
  std::string address;
  std::string host;
  std::unique_ptr<proto::Launcher::Stub> stub;
  grpc::ClientContext context;  // The Submit stream's; TryCancel cuts it.
  std::thread follower;
  bool started = false;
  bool ended = false;
  std::optional<proto::JobEvent> terminal;  // Finished or Failed
  grpc::Status stream_status;               // When the stream ended without one.
};

LaunchSession::LaunchSession(proto::Plan plan, LaunchOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<LaunchSession>> LaunchSession::Create(proto::Plan plan, LaunchOptions options) {
  const int64_t num_nodes = plan.cluster().num_nodes();
  const int64_t given = static_cast<int64_t>(options.nodes.size());
  if (given != num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nodes lists ", given, given == 1 ? " daemon" : " daemons", " but the plan's cluster has ", num_nodes,
        num_nodes == 1 ? " node" : " nodes", " (cluster.num_nodes): give one HOST:PORT per node, node 0 first"));
  }
  if (absl::Status status = VerifyPlan(plan); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the plan fails verification: ", status.message()));
  }
  if (options.iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--iters=", options.iterations, " must be >= 1"));
  }
  if (!std::isfinite(options.collective_timeout_s) || options.collective_timeout_s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--collective_timeout_s=", options.collective_timeout_s, " must be a number of seconds >= 0"));
  }
  if (!options.transport.empty()) {
    if (absl::Status status = ParseTransport(options.transport).status(); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--transport: ", status.message()));
    }
  }
  if (options.communication_priority_levels != -1) {
    absl::Status levels = actors::ValidateCommunicationPriorityLevels(options.communication_priority_levels,
                                                                      "--communication_priority_levels");
    if (!levels.ok()) return levels;
  }
  {
    proto::RunOptions checkpoints;
    checkpoints.set_checkpoint_dir(options.checkpoint_dir);
    checkpoints.set_checkpoint_every(options.checkpoint_every);
    checkpoints.set_resume_from(options.resume_from);
    checkpoints.set_keep_checkpoints(options.keep_checkpoints);
    checkpoints.set_keep_checkpoint_every(options.keep_checkpoint_every);
    if (absl::Status status = ValidateCheckpointOptions(checkpoints, "--"); !status.ok()) return status;
  }
  if (options.token.empty()) return absl::InvalidArgumentError("no token (--token_file)");
  if (options.job_id.empty()) options.job_id = GenerateJobId();
  if (absl::Status status = ValidateJobId(options.job_id); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--job_id: ", status.message()));
  }
  {
    // In-memory checkpoints: by default scoped by this job's id (a restarted attempt
    // passes its launch's), on the daemons of `nodes`.
    proto::RunOptions& memory = options.memory_checkpoints;
    const bool used = memory.memory_checkpoint_every() > 0 || memory.memory_resume_iteration() > 0;
    if (used && memory.memory_checkpoint_scope().empty()) memory.set_memory_checkpoint_scope(options.job_id);
    if (memory.memory_checkpoint_every() > 0 && memory.memory_checkpoint_daemons().empty()) {
      for (const std::string& node : options.nodes) memory.add_memory_checkpoint_daemons(node);
    }
    if (absl::Status status = ValidateMemoryCheckpointOptions(memory, "--"); !status.ok()) return status;
  }
  auto session = std::unique_ptr<LaunchSession>(new LaunchSession(std::move(plan), std::move(options)));
  absl::StatusOr<std::vector<DaemonNode>> daemons =
      ConnectToDaemons(session->options_.nodes, session->options_.tls_ca_file);
  if (!daemons.ok()) return daemons.status();
  for (DaemonNode& daemon : *daemons) {
    auto node = std::make_unique<Node>();
    node->rank = daemon.rank;
    node->address = daemon.address;
    node->host = daemon.host;
    node->stub = std::move(daemon.stub);
    session->nodes_.push_back(std::move(node));
  }
  return session;
}

LaunchSession::~LaunchSession() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  for (auto& node : nodes_) {
    if (node->follower.joinable()) {
      node->context.TryCancel();
      node->follower.join();
    }
  }
  for (std::thread& canceller : cancellers_) canceller.join();
}

std::string LaunchSession::NodeName(int64_t node) const {
  return launcher::NodeName(node, nodes_[node]->address);
}

void LaunchSession::Push(Item item, bool wait_for_room) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wait_for_room) {
    changed_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return items_.size() < kMaxQueuedItems || closing_;
    });
  }
  items_.push_back(std::move(item));
  changed_.notify_all();
}

std::optional<LaunchSession::Item> LaunchSession::Pop(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return !items_.empty(); };
  if (!WaitUntil(changed_, lock, deadline, ready)) return std::nullopt;
  Item item = std::move(items_.front());
  items_.pop_front();
  changed_.notify_all();  // Room for a Push waiting for it.
  return item;
}

void LaunchSession::Interrupt(int signal) {
  Item item;
  item.kind = Item::kInterrupt;
  item.signal = signal;
  Push(std::move(item));
}

void LaunchSession::Follow(Node* node) {
  proto::SubmitRequest request;
  request.set_job_id(options_.job_id);
  *request.mutable_plan() = plan_;
  request.set_node_rank(node->rank);
  proto::RunOptions* run = request.mutable_options();
  run->set_iterations(options_.iterations);
  run->set_collective_timeout_s(options_.collective_timeout_s);
  run->set_rendezvous_address(options_.nodes[0]);
  run->set_worker_host(node->host);
  run->set_checkpoint_dir(options_.checkpoint_dir);
  run->set_checkpoint_every(options_.checkpoint_every);
  run->set_resume_from(options_.resume_from);
  run->set_keep_checkpoints(options_.keep_checkpoints);
  run->set_keep_checkpoint_every(options_.keep_checkpoint_every);
  run->set_record_trace(options_.record_trace);
  run->set_transport(options_.transport);
  if (options_.communication_priority_levels >= 0) {
    run->set_communication_priority_levels(options_.communication_priority_levels);
  }
  run->set_measure_links(options_.measure_links);
  for (const proto::Recovery& recovery : options_.recoveries) *run->add_recoveries() = recovery;
  run->MergeFrom(options_.memory_checkpoints);
  run->set_disable_heartbeats(options_.monitor.hang_seconds <= 0 && options_.monitor.slow_factor <= 0);
  AttachToken(&node->context, options_.token);
  std::unique_ptr<grpc::ClientReader<proto::JobEvent>> reader = node->stub->Submit(&node->context, request);
  request.Clear();  // The plan may be large; the stream has sent it.
  proto::JobEvent event;
  while (reader->Read(&event)) {
    Item item;
    item.kind = Item::kEvent;
    item.node = node->rank;
    item.event = std::move(event);
    // gRPC's flow control then holds the daemon's writes; the daemon bounds its own queue.
    Push(std::move(item), /*wait_for_room=*/true);
    event.Clear();
  }
  Item end;
  end.kind = Item::kStreamEnd;
  end.node = node->rank;
  end.status = reader->Finish();
  Push(std::move(end));
}

void LaunchSession::CancelEverywhere() {
  for (auto& owned : nodes_) {
    Node* node = owned.get();
    if (node->ended) continue;
    if (!node->started) {
      // Its daemon may not have the job yet (a Cancel would find nothing); cutting the
      // stream makes the daemon cancel it as soon as it exists.
      node->context.TryCancel();
      continue;
    }
    // A Cancel call (rather than cutting the stream) lets the daemon report the worker's
    // end, with its progress, on the stream.
    cancellers_.emplace_back([this, node] {
      grpc::ClientContext context;
      AttachToken(&context, options_.token);
      context.set_deadline(absl::ToChronoTime(absl::Now() + kCancelCallTimeout));
      proto::CancelRequest request;
      request.set_job_id(options_.job_id);
      proto::CancelResponse response;
      if (!node->stub->Cancel(&context, request, &response).ok()) node->context.TryCancel();
    });
  }
}

void LaunchSession::CollectDumps() {
  std::vector<std::thread> threads;
  std::vector<NodeDump> dumps(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* node = nodes_[i].get();
    dumps[i].node = node->rank;
    if (!node->started) {
      dumps[i].note = absl::StrCat("node ", node->rank, " did not start the job");
      continue;
    }
    threads.emplace_back([this, node, dump = &dumps[i]] {
      grpc::ClientContext context;
      AttachToken(&context, options_.token);
      context.set_deadline(absl::ToChronoTime(absl::Now() + options_.dump_timeout + absl::Seconds(2)));
      proto::DumpRequest request;
      request.set_job_id(options_.job_id);
      request.set_timeout_s(absl::ToDoubleSeconds(options_.dump_timeout));
      proto::DumpResponse response;
      const grpc::Status status = node->stub->Dump(&context, request, &response);
      if (!status.ok()) {
        dump->note = DescribeFailedCall(node->rank, node->address, status, "the dump");
        return;
      }
      dump->json = response.dump_json();
      dump->note = response.note();
    });
  }
  for (std::thread& thread : threads) thread.join();
  dumps_ = std::move(dumps);
}

absl::Status LaunchSession::Run() {
  for (auto& node : nodes_) node->follower = std::thread(&LaunchSession::Follow, this, node.get());
  MetricsMerger merger(ReportingNodes(plan_), plan_.job().batch_size());
  bool cancelling = false;
  absl::Time cancel_deadline = absl::InfiniteFuture();
  std::string headline;
  absl::StatusCode code = absl::StatusCode::kOk;
  // A worker that failed because a peer did (JobEvent.Failed.caused_by_peer: it lost the
  // connection, or read the peer's record) usually reports a few milliseconds before the
  // node that failed first does, or instead of it. Such a failure is provisional: the job
  // is cancelled only after kPeerReportWait, and the first failure of a node that failed by
  // itself (its worker killed or failing, its daemon unreachable), arriving by then or
  // during the cancel wait, takes the headline, and failed_node() with it.
  constexpr absl::Duration kPeerReportWait = absl::Milliseconds(500);
  bool provisional = false;
  absl::Time settle_deadline = absl::InfiniteFuture();
  auto cancel_now = [&] {
    settle_deadline = absl::InfiniteFuture();
    // The dumps first: a cancelled worker writes none.
    if (options_.collect_dumps && code != absl::StatusCode::kCancelled) CollectDumps();
    cancel_deadline = absl::Now() + options_.cancel_wait;
    CancelEverywhere();
  };
  auto fail = [&](absl::StatusCode failure_code, std::string text, int64_t node = -1, bool caused_by_peer = false) {
    if (cancelling) {
      if (!provisional || caused_by_peer || failure_code == absl::StatusCode::kCancelled) return;
      provisional = false;
      failed_node_ = node;
      code = failure_code;
      headline = std::move(text);
      if (settle_deadline != absl::InfiniteFuture()) cancel_now();
      return;
    }
    cancelling = true;
    provisional = caused_by_peer;
    failed_node_ = node;
    failed_at_ = absl::Now();
    code = failure_code;
    headline = std::move(text);
    if (provisional) {
      settle_deadline = absl::Now() + kPeerReportWait;
      return;
    }
    cancel_now();
  };
  ProgressMonitor monitor(plan_, options_.monitor);
  bool hang_reported = false;
  absl::Time next_check = absl::Now() + absl::Milliseconds(250);
  auto check_progress = [&] {
    if (cancelling || absl::Now() < next_check) return;
    const absl::Time now = absl::Now();
    next_check = now + absl::Milliseconds(250);
    if (!hang_reported) {
      if (std::optional<HangFinding> hang = monitor.CheckHang(now)) {
        hang_reported = true;
        if (options_.on_hang) options_.on_hang(hang->text);
        if (options_.stop_on_hang) {
          fail(absl::StatusCode::kDeadlineExceeded,
               absl::StrCat("job '", options_.job_id, "' failed: ", hang->text));
          return;
        }
      }
    }
    for (const std::string& warning : monitor.CheckSlow(now)) {
      if (options_.on_warning) options_.on_warning(warning);
    }
  };
  auto all_ended = [&] {
    for (const auto& node : nodes_) {
      if (!node->ended) return false;
    }
    return true;
  };
  while (!all_ended()) {
    check_progress();
    std::optional<Item> item =
        Pop(std::min(settle_deadline, cancelling ? cancel_deadline : std::min(cancel_deadline, next_check)));
    if (absl::Now() >= settle_deadline) cancel_now();  // No report from the node that failed first.
    if (!item.has_value()) {
      if (cancelling && absl::Now() >= cancel_deadline) break;  // The cancel wait is over.
      continue;
    }
    if (item->kind == Item::kInterrupt) {
      fail(absl::StatusCode::kCancelled,
           absl::StrCat("job '", options_.job_id, "' cancelled by ", SignalText(item->signal)));
      continue;
    }
    Node& node = *nodes_[item->node];
    if (item->kind == Item::kStreamEnd) {
      if (node.ended) continue;  // The normal end after a terminal event.
      node.ended = true;
      node.stream_status = item->status;
      const std::string message = item->status.error_message();
      if (!node.started) {
        fail(static_cast<absl::StatusCode>(item->status.error_code()),
             absl::StrCat("job '", options_.job_id, "' failed: ",
                          DescribeFailedCall(node.rank, node.address, item->status, "the job")),
             node.rank);
      } else if (item->status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        fail(absl::StatusCode::kUnavailable, absl::StrCat("job '", options_.job_id, "' failed: ", NodeName(node.rank),
                                                          " became unreachable: ", message),
             node.rank);
      } else {
        fail(absl::StatusCode::kAborted, absl::StrCat("job '", options_.job_id, "' failed: ", NodeName(node.rank),
                                                      " ended its event stream early: ", message),
             node.rank);
      }
      continue;
    }
    const proto::JobEvent& event = item->event;
    switch (event.event_case()) {
      case proto::JobEvent::kStarted:
        node.started = true;
        // Started after a failure elsewhere: the job exists there now, cancel it too.
        if (cancelling) CancelEverywhere();
        break;
      case proto::JobEvent::kMetrics:
        // After a failure the survivors' reports still count: an iteration they trained
        // with the lost node may be complete, or go out as incomplete below. Not after a
        // cancel (Ctrl-C, `oneflow cancel`): the job stops there.
        if (cancelling && code == absl::StatusCode::kCancelled) break;
        for (const proto::IterationMetrics& merged : merger.Add(node.rank, event.metrics())) {
          if (options_.on_metrics) options_.on_metrics(merged);
        }
        break;
      case proto::JobEvent::kLog:
        if (options_.on_log) options_.on_log(node.rank, event.log().text());
        break;
      case proto::JobEvent::kTrace:
        if (options_.on_trace && !cancelling) options_.on_trace(node.rank, event.trace());
        break;
      case proto::JobEvent::kLinkMeasurements:
        if (options_.on_link_measurements && !cancelling) {
          options_.on_link_measurements(node.rank, event.link_measurements());
        }
        break;
      case proto::JobEvent::kHeartbeat:
        monitor.Observe(node.rank, event.heartbeat(), absl::Now());
        break;
      case proto::JobEvent::kFinished:
        node.ended = true;
        node.terminal = event;
        break;
      case proto::JobEvent::kFailed:
        node.ended = true;
        node.terminal = event;
        if (event.failed().cancelled()) {
          // Cancelled from outside this client (`oneflow cancel JOB`, a daemon shutting
          // down): the job did not fail, so CANCELLED: no flight-recorder dumps to fetch
          // (a cancelled worker writes none) and no --max_restarts restart.
          fail(absl::StatusCode::kCancelled, absl::StrCat("job '", options_.job_id, "' cancelled on ",
                                                          NodeName(node.rank), ": ", event.failed().reason()),
               node.rank);
        } else {
          fail(absl::StatusCode::kAborted, absl::StrCat("job '", options_.job_id, "' failed on ", NodeName(node.rank),
                                                        ": ", event.failed().reason()),
               node.rank, event.failed().caused_by_peer());
        }
        break;
      default:
        break;
    }
  }
  // Every node ended while a provisional failure waited: the dumps are still collected.
  if (settle_deadline != absl::InfiniteFuture()) cancel_now();
  // Whoever has not answered by now is cut off (their daemons cancel on disconnect).
  for (auto& node : nodes_) {
    if (!node->ended) node->context.TryCancel();
  }
  for (auto& node : nodes_) node->follower.join();
  for (std::thread& canceller : cancellers_) canceller.join();
  cancellers_.clear();
  if (cancelling && code != absl::StatusCode::kCancelled) {
    // The iterations whose reports from some node went down with it: printed from the
    // nodes that reported them, so that the metrics hold every iteration trained.
    // Their lines' node_step_ms lists the nodes that reported; a warning says which are
    // missing, once per set of missing nodes.
    std::vector<int64_t> unreported;
    std::map<std::vector<int64_t>, std::vector<int64_t>> by_missing;  // missing nodes -> iterations
    for (const MetricsMerger::Incomplete& incomplete : merger.TakeIncomplete(&unreported)) {
      if (options_.on_metrics) options_.on_metrics(incomplete.metrics);
      by_missing[incomplete.missing_nodes].push_back(incomplete.metrics.iteration());
    }
    for (const auto& [missing, iterations] : by_missing) {
      if (!options_.on_warning) break;
      std::vector<std::string> names;
      for (int64_t node : missing) names.push_back(NodeName(node));
      options_.on_warning(absl::StrCat("the metrics of iteration", iterations.size() == 1 ? " " : "s ",
                                       absl::StrJoin(iterations, ", "), " are from the other nodes only: ",
                                       absl::StrJoin(names, ", "), iterations.size() == 1 ? "'s report" : "'s reports",
                                       " never arrived before the job failed"));
    }
    if (!unreported.empty() && options_.on_warning) {
      options_.on_warning(absl::StrCat("no node's metrics of iteration", unreported.size() == 1 ? " " : "s ",
                                       absl::StrJoin(unreported, ", "),
                                       " arrived before the job failed (a daemon drops the reports of a client "
                                       "that reads too slowly); later iterations' did"));
    }
  }
  if (!cancelling) return absl::OkStatus();
  return absl::Status(code, Report(headline));
}

std::string LaunchSession::Report(const std::string& headline) const {
  std::string text = headline;
  for (const auto& node : nodes_) {
    absl::StrAppend(&text, "\n  ", NodeName(node->rank), ": ");
    const google::protobuf::RepeatedPtrField<proto::DeviceProgress>* progress = nullptr;
    if (!node->terminal.has_value()) {
      if (!node->ended) {
        absl::StrAppend(&text, "no end reported within ", absl::FormatDuration(options_.cancel_wait),
                        " (its stream was cut; its daemon cancels the job)");
      } else if (!node->started) {
        absl::StrAppend(&text, "did not start: ", node->stream_status.error_message());
      } else {
        absl::StrAppend(&text, "lost: ", node->stream_status.error_message());
      }
    } else if (node->terminal->has_finished()) {
      absl::StrAppend(&text, "finished");
      progress = &node->terminal->finished().progress();
    } else {
      const proto::JobEvent::Failed& failed = node->terminal->failed();
      absl::StrAppend(&text, failed.cancelled() ? "cancelled" : "failed");
      if (failed.signal() != 0) absl::StrAppend(&text, ", ", SignalText(failed.signal()));
      if (failed.signal() == 0 && failed.exit_code() != 0) absl::StrAppend(&text, ", exit code ", failed.exit_code());
      progress = &failed.progress();
    }
    if (progress == nullptr) continue;
    if (progress->empty()) absl::StrAppend(&text, "\n    no progress recorded (the worker left no status file)");
    for (const proto::DeviceProgress& device : *progress) {
      absl::StrAppend(&text, "\n    ", DeviceProgressText(device, &plan_));
    }
  }
  return text;
}

}  // namespace oneflow::launcher
