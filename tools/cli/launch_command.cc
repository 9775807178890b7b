#include "tools/cli/launch_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actors/metrics.h"
#include "actors/predicted_step.h"
#include "actors/trace.h"
#include "oneflow_core/status.h"
#include "absl/strings/str_replace.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/diagnose.h"
#include "tools/cli/launch_recovery.h"
#include "tools/cli/memory_recovery.h"
#include "tools/cli/launch_shrink.h"
#include "plan/plan_io.h"
#include "tools/launcher/daemon_client.h"
#include "tools/launcher/launch_client.h"
#include "tools/launcher/metrics_proto.h"
#include "tools/launcher/signal_watcher.h"

// Shared with `oneflow run` (run_command.cc defines them).
ABSL_DECLARE_FLAG(int64_t, iters);
ABSL_DECLARE_FLAG(std::string, metrics);
ABSL_DECLARE_FLAG(std::string, checkpoint_dir);
ABSL_DECLARE_FLAG(int64_t, checkpoint_every);
ABSL_DECLARE_FLAG(int64_t, keep_checkpoints);
ABSL_DECLARE_FLAG(int64_t, keep_checkpoint_every);
ABSL_DECLARE_FLAG(std::string, resume_from);
ABSL_DECLARE_FLAG(std::string, trace);
ABSL_DECLARE_FLAG(int64_t, communication_priority_levels);

ABSL_FLAG(std::string, transport, "",
          "Transport of the groups that span nodes: ucx (shared memory within a host, TCP across hosts; the "
          "default) or gloo (TCP). Recorded in every metrics line.");
ABSL_FLAG(double, collective_timeout_s, 0, "Seconds a collective may wait for its peers (0: the workers' default).");
ABSL_FLAG(std::string, job_id, "", "The job's id on every node (default: generated from the time).");
ABSL_FLAG(int64_t, max_restarts, 0,
          "When the job fails (a worker dies, a collective times out), submit it again up to this many times, "
          "resuming from the newest complete checkpoint of --checkpoint_dir (job ids ID-restart1, ...).");

ABSL_FLAG(std::string, spare_nodes, "",
          "HOST:PORT of spare oneflowd daemons, comma-separated: checked at the start (running, this launch's "
          "token); when a node of the job is lost, a spare takes its rank and the job resumes on the same layout "
          "from the newest checkpoint of --checkpoint_dir (docs/elastic.md).");

ABSL_FLAG(int64_t, memory_checkpoint_every, 0,
          "Every N iterations each node keeps its shards of a checkpoint in its daemon's memory and a replica on "
          "the next node's daemon; a recovery (--max_restarts, --spare_nodes) resumes from the newest complete "
          "checkpoint, in memory or on disk, without reading the disk when memory is newer (0: none; "
          "docs/elastic.md).");
ABSL_FLAG(std::string, elastic, "off",
          "When a node is lost and no spare is left: off (the launch fails) or shrink (the job is compiled again "
          "for the surviving nodes, dp reduced, and resumes from the newest checkpoint; docs/elastic.md).");
ABSL_FLAG(std::string, min_nodes, "",
          "With --elastic=shrink: the fewest nodes the job may continue on (1..the job's nodes; default 1).");

ABSL_FLAG(double, hang_seconds, 5,
          "Name a rank that made no progress for this many seconds while others wait for it in a collective, "
          "from the daemons' heartbeats, and stop the job with that as its cause (0: off).");
ABSL_FLAG(std::string, hang_action, "stop", "What a hang found by --hang_seconds does: stop (the job fails) or warn.");
ABSL_FLAG(double, slow_factor, 3,
          "Warn about a rank that computes this many times longer than the rest of a collective group, which "
          "wait for it (0: off).");
ABSL_FLAG(bool, diagnose_on_failure, true,
          "When the job fails, fetch every node's flight recorder dump before cancelling it and print their "
          "diagnosis (oneflow diagnose).");

namespace oneflow::cli {
namespace {

// The workers open checkpoint paths on their own nodes, in their own working
// directories: a relative path is taken from here (the directory must be one every node
// reaches under the same name).
std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

// The session a signal should interrupt; the signal thread may fire before the session
// exists or after it is gone.
class InterruptTarget {
 public:
  void Set(launcher::LaunchSession* session) {
    std::lock_guard<std::mutex> lock(mutex_);
    session_ = session;
    if (session_ != nullptr && pending_ != 0) session_->Interrupt(pending_);
  }
  void Signal(int signal) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (session_ != nullptr) {
      session_->Interrupt(signal);
    } else {
      pending_ = signal;
    }
  }

 private:
  std::mutex mutex_;
  launcher::LaunchSession* session_ ABSL_GUARDED_BY(mutex_) = nullptr;
  int pending_ ABSL_GUARDED_BY(mutex_) = 0;
};

// The line the worker completing a checkpoint prints (tools/worker/worker.cc):
// "checkpoint DIR/iter-00000040 complete: ...".
bool IsCheckpointComplete(const std::string& line) {
  return line.rfind("checkpoint ", 0) == 0 && line.find(" complete: ") != std::string::npos;
}

// A failure a new attempt may get past: a worker that failed or died, a node that became
// unreachable, a timeout. Not a refusal (a bad plan or option fails again), not Ctrl-C.
bool Restartable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted || status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

// How long a daemon gets to answer Launcher.Health: at the start (a spare) and after a
// failure (is the node lost?). Loopback and LAN daemons answer in milliseconds.
constexpr absl::Duration kProbeTimeout = absl::Seconds(2);

// A recovery under way: reported (metrics line, stderr) with the first iteration the next
// attempt trains.
struct PendingRecovery {
  proto::Recovery recovery;
  absl::Time failed_at;
  // The timeline's steps (docs/elastic.md): every node of the failed attempt ended, the
  // daemons answered the probe, the new attempt was submitted.
  absl::Time ended_at, probed_at, submitted_at;
  int64_t iterations_lost = 0;
};

void PrintLaunchLine(const std::string& text) {
  std::fprintf(stderr, "oneflow launch: %s\n", text.c_str());
  std::fflush(stderr);
}

// --memory_checkpoint_every=K: K >= 0, and only with a way to recover (the in-memory
// checkpoints are read by nothing else).
absl::Status CheckMemoryCheckpointFlag(int64_t every, int64_t max_restarts, bool spares) {
  if (every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory_checkpoint_every=", every, " must be >= 0 (0: no in-memory checkpoints)"));
  }
  if (every > 0 && max_restarts == 0 && !spares) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory_checkpoint_every=", every,
        " is read only when the launch recovers from a failure: give --max_restarts=K or --spare_nodes too"));
  }
  return absl::OkStatus();
}

// After a failure: the newest in-memory checkpoint whose parts the daemons in
// `answering` still hold, when it is at least as new as the disk checkpoint of
// `disk_iteration` (-1: none); then the next attempt resumes from it (the RunOptions
// memory_resume_* fields of `memory`). Says which newer ones are incomplete.
struct MemoryChoice {
  bool chosen = false;
  int64_t iteration = 0;
  std::string where;  // "on daemons A, B"
};
MemoryChoice ChooseMemoryResume(const std::vector<std::string>& answering, const std::vector<std::string>& daemons,
                                int64_t disk_iteration, const std::string& scope, const std::string& token,
                                const std::string& tls_ca_file, proto::RunOptions* memory) {
  memory->clear_memory_resume_iteration();
  memory->clear_memory_resume_holders();
  MemoryChoice choice;
  if (memory->memory_checkpoint_every() <= 0) return choice;
  const MemoryResumePoint point = ChooseMemoryCheckpoint(
      ListMemoryCheckpoints(answering, scope, token, tls_ca_file, absl::Seconds(2)), daemons);
  const bool use = point.iteration > 0 && point.iteration >= disk_iteration;
  for (const std::string& line : point.incomplete) {
    if (point.iteration > 0 && !use) break;
    PrintLaunchLine(absl::StrCat(line, use                  ? ""
                                       : disk_iteration >= 0 ? "; resuming from the disk checkpoint"
                                                             : "; no in-memory checkpoint is complete"));
  }
  if (point.iteration <= 0 && point.incomplete.empty() && disk_iteration >= 0) {
    // Not one part kept (each daemon refused them, e.g. over its
    // --memory_checkpoint_limit_bytes, or dropped them): the fallback is said, not silent.
    PrintLaunchLine(absl::StrCat(
        "no in-memory checkpoint is held by the daemons that answer (", answering.size(),
        " of ", daemons.size(), "; the workers' warnings above say why a part was not kept); resuming from the disk "
        "checkpoint after iteration ", disk_iteration));
  }
  if (!use) return choice;
  memory->set_memory_resume_iteration(point.iteration);
  std::vector<std::string> distinct;
  for (const std::string& holder : point.holders) {
    memory->add_memory_resume_holders(holder);
    if (!holder.empty() && std::find(distinct.begin(), distinct.end(), holder) == distinct.end()) {
      distinct.push_back(holder);
    }
  }
  choice.chosen = true;
  choice.iteration = point.iteration;
  choice.where = absl::StrCat("on daemons ", absl::StrJoin(distinct, ", "));
  return choice;
}

absl::Status RunLaunch(const std::vector<std::string>& arguments, std::ostream& out) {
  // From here on, SIGINT/SIGTERM cancel the job rather than kill this process.
  InterruptTarget interrupt;
  launcher::SignalWatcher watcher({SIGINT, SIGTERM}, [&interrupt](int signal) { interrupt.Signal(signal); });

  launcher::LaunchOptions options;
  options.iterations = absl::GetFlag(FLAGS_iters);
  options.collective_timeout_s = absl::GetFlag(FLAGS_collective_timeout_s);
  options.transport = absl::GetFlag(FLAGS_transport);
  options.communication_priority_levels = absl::GetFlag(FLAGS_communication_priority_levels);
  options.job_id = absl::GetFlag(FLAGS_job_id);
  options.checkpoint_dir = AbsolutePath(absl::GetFlag(FLAGS_checkpoint_dir));
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  options.resume_from = AbsolutePath(absl::GetFlag(FLAGS_resume_from));
  options.keep_checkpoints = absl::GetFlag(FLAGS_keep_checkpoints);
  options.keep_checkpoint_every = absl::GetFlag(FLAGS_keep_checkpoint_every);
  const int64_t max_restarts = absl::GetFlag(FLAGS_max_restarts);
  if (max_restarts < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--max_restarts=", max_restarts, " must be >= 0"));
  }
  if (max_restarts > 0 && options.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_restarts=", max_restarts,
        " needs --checkpoint_dir and --checkpoint_every: a restarted job resumes from the newest checkpoint"));
  }
  options.monitor.hang_seconds = absl::GetFlag(FLAGS_hang_seconds);
  options.monitor.slow_factor = absl::GetFlag(FLAGS_slow_factor);
  if (!(options.monitor.hang_seconds >= 0) || !(options.monitor.slow_factor >= 0)) {
    return absl::InvalidArgumentError("--hang_seconds and --slow_factor must be >= 0 (0: off)");
  }
  const std::string hang_action = absl::GetFlag(FLAGS_hang_action);
  if (hang_action != "stop" && hang_action != "warn") {
    return absl::InvalidArgumentError(absl::StrCat("--hang_action=", hang_action, " is not a choice; valid: stop, warn"));
  }
  options.stop_on_hang = hang_action == "stop";
  options.collect_dumps = absl::GetFlag(FLAGS_diagnose_on_failure);
  options.on_warning = [](const std::string& line) {
    std::fprintf(stderr, "oneflow launch: warning: %s\n", line.c_str());
    std::fflush(stderr);
  };
  options.on_hang = [&options](const std::string& line) {
    std::fprintf(stderr, "oneflow launch: %s%s\n", options.stop_on_hang ? "" : "warning: ", line.c_str());
    if (options.stop_on_hang) std::fprintf(stderr, "oneflow launch: stopping the job\n");
    std::fflush(stderr);
  };
  OF_ASSIGN_OR_RETURN(DaemonFlags daemons, ReadDaemonFlags());
  options.nodes = std::move(daemons.nodes);
  options.token = std::move(daemons.token);
  options.tls_ca_file = std::move(daemons.tls_ca_file);
  // A re-planned job (--elastic=shrink) runs a new plan on fewer nodes.
  OF_ASSIGN_OR_RETURN(proto::Plan plan, ReadPlanFile(arguments[0]));
  OF_ASSIGN_OR_RETURN(const ElasticPolicy elastic,
                      ParseElasticPolicy(absl::GetFlag(FLAGS_elastic), absl::GetFlag(FLAGS_min_nodes),
                                         static_cast<int64_t>(options.nodes.size()), !options.checkpoint_dir.empty()));
  if (elastic.shrink && !plan.has_recipe()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--elastic=shrink: ", arguments[0],
        " carries no recipe (Plan.recipe) to compile it again for fewer nodes; it was written before plans "
        "recorded their model: compile it again with this version's `oneflow compile` or example binary"));
  }
  std::vector<std::string> spares = ParseSpareNodes(absl::GetFlag(FLAGS_spare_nodes));
  if (!spares.empty()) {
    if (options.checkpoint_dir.empty()) {
      return absl::InvalidArgumentError(
          "--spare_nodes needs --checkpoint_dir and --checkpoint_every: the job resumes on the spare from the "
          "newest checkpoint");
    }
    OF_RETURN_IF_ERROR(CheckSpareNodes(spares, options.nodes, options.token, options.tls_ca_file, kProbeTimeout));
  }
  const int64_t memory_every = absl::GetFlag(FLAGS_memory_checkpoint_every);
  OF_RETURN_IF_ERROR(CheckMemoryCheckpointFlag(memory_every, max_restarts, !spares.empty()));
  options.memory_checkpoints.set_memory_checkpoint_every(memory_every);
  // Every daemon that may hold a part: dropped when the launch ends.
  std::vector<std::string> memory_daemons = options.nodes;
  if (!options.resume_from.empty()) {
    // A damaged newest checkpoint the workers would pass over silently is named here.
    absl::StatusOr<ResumePoint> point = NewestResumePoint(options.resume_from);
    if (point.ok()) {
      for (const std::string& warning : point->warnings) PrintLaunchLine(absl::StrCat("warning: ", warning));
    }
  }

  OF_ASSIGN_OR_RETURN(std::unique_ptr<actors::MetricsReporter> reporter,
                      actors::MetricsReporter::Open(absl::GetFlag(FLAGS_metrics), options.iterations, &out,
                                                    isatty(STDOUT_FILENO)));
  // The merged metrics of every node, printed as `oneflow run` prints its own (the same
  // fields, compression included). After a restart the iterations since the checkpoint
  // are printed again, as the new attempt trains them.
  std::optional<PendingRecovery> pending_recovery;
  int64_t last_iteration = -1;  // The newest merged iteration of the current attempt.
  // The attempt's measured step beside --auto_parallel's prediction (actors/predicted_step.h).
  actors::MeasuredStep measured;
  options.on_metrics = [&](const proto::IterationMetrics& m) {
    actors::IterationMetrics metrics = launcher::MetricsFromProto(m);
    last_iteration = m.iteration();
    measured.Add(metrics.iteration, metrics.step_ms);
    if (pending_recovery.has_value()) {
      // The kill-to-training time: from the failure to the first iteration trained again.
      const double seconds = absl::ToDoubleSeconds(absl::Now() - pending_recovery->failed_at);
      metrics.recovery_json = RecoveryJson(pending_recovery->recovery, seconds);
      const PendingRecovery& done = *pending_recovery;
      auto after = [&done](absl::Time time) { return absl::ToDoubleSeconds(time - done.failed_at); };
      PrintLaunchLine(absl::StrFormat(
          "recovered in %.3f s (failed attempt ended after %.3f s, daemons probed after %.3f s, new attempt "
          "submitted after %.3f s; %lld iterations trained again): %s",
          seconds, after(done.ended_at), after(done.probed_at), after(done.submitted_at),
          static_cast<long long>(done.iterations_lost), metrics.recovery_json));
      pending_recovery.reset();
    }
    reporter->Report(metrics);
  };
  bool checkpoint_saved = false;  // In this launch: a restart resumes from it.
  std::vector<proto::Recovery> recoveries;  // Every recovery from a lost node so far.
  options.on_log = [&checkpoint_saved](int64_t node, const std::string& line) {
    if (IsCheckpointComplete(line)) checkpoint_saved = true;
    std::fprintf(stderr, "[node %lld] %s\n", static_cast<long long>(node), line.c_str());
  };

  // --trace: every node's acts, of the attempt that finished, as one trace.
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  options.record_trace = !trace_path.empty();
  std::vector<actors::ActRecord> acts;
  options.on_trace = [&acts](int64_t, const proto::JobEvent::TraceActs& trace) {
    for (const proto::JobEvent::Act& act : trace.acts()) {
      acts.push_back({act.thread(), act.device_index(), act.actor_id(), act.iteration(), act.start_unix_ns(),
                      act.end_unix_ns()});
    }
  };

  std::string base_job_id;
  absl::Status status;
  int64_t restarts = 0;  // --max_restarts used: attempts on the same nodes.
  for (int64_t attempt = 0;; ++attempt) {
    acts.clear();
    last_iteration = -1;
    measured = actors::MeasuredStep(actors::DenseWarmupIterations(plan));
    launcher::LaunchOptions attempt_options = options;
    if (attempt > 0) attempt_options.job_id = absl::StrCat(base_job_id, "-restart", attempt);
    OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::LaunchSession> session,
                        launcher::LaunchSession::Create(plan, std::move(attempt_options)));
    if (attempt == 0) {
      base_job_id = session->job_id();
      // The restarted attempts put and find their in-memory checkpoints under the
      // launch's id, not their own.
      if (memory_every > 0) options.memory_checkpoints.set_memory_checkpoint_scope(base_job_id);
    }
    std::fprintf(stderr, "oneflow launch: job '%s' on %zu nodes%s%s\n", session->job_id().c_str(), options.nodes.size(),
                 options.resume_from.empty() ? "" : ", resuming from ", options.resume_from.c_str());
    interrupt.Set(session.get());
    if (pending_recovery.has_value()) pending_recovery->submitted_at = absl::Now();
    status = session->Run();
    const absl::Time ended_at = absl::Now();
    interrupt.Set(nullptr);
    if (!status.ok() && !session->dumps().empty()) {
      // The flight recorder dumps the nodes had at the failure, diagnosed.
      std::vector<FetchedDump> fetched;
      for (const launcher::NodeDump& dump : session->dumps()) fetched.push_back({dump.node, dump.json, dump.note});
      std::string text = DiagnoseFetchedDumps(fetched);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      status = absl::Status(status.code(), absl::StrCat(status.message(), "\n  diagnosis: ",
                                                        absl::StrReplaceAll(text, {{"\n", "\n    "}})));
    }
    if (status.ok() || !Restartable(status)) break;
    // Which nodes are gone: their daemons do not answer. A node whose daemon answers but
    // whose worker failed is lost too once no --max_restarts are left to retry it there.
    const std::vector<absl::Status> answers =
        ProbeDaemons(options.nodes, options.token, options.tls_ca_file, kProbeTimeout);
    const absl::Time probed_at = absl::Now();
    std::vector<int64_t> lost;
    for (size_t i = 0; i < answers.size(); ++i) {
      if (!answers[i].ok()) lost.push_back(static_cast<int64_t>(i));
    }
    if (lost.empty() && restarts >= max_restarts && (!spares.empty() || elastic.shrink) &&
        session->failed_node() >= 0) {
      lost.push_back(session->failed_node());
    }
    if (lost.empty()) {
      if (restarts >= max_restarts) break;
      ++restarts;
      // Restart from the newest complete checkpoint of this launch, else from where this
      // launch started.
      if (checkpoint_saved) {
        absl::StatusOr<ResumePoint> point = NewestResumePoint(options.checkpoint_dir);
        if (point.ok()) {
          for (const std::string& warning : point->warnings) PrintLaunchLine(absl::StrCat("warning: ", warning));
        }
        options.resume_from = options.checkpoint_dir;
      }
      PrintLaunchLine(absl::StrCat("restart ", restarts, " of ", max_restarts, ": ", status.message()));
      if (memory_every > 0) {
        absl::StatusOr<ResumePoint> disk = NewestResumePoint(options.checkpoint_dir);
        const MemoryChoice memory =
            ChooseMemoryResume(options.nodes, options.nodes, disk.ok() ? disk->iteration : -1, base_job_id,
                               options.token, options.tls_ca_file, &options.memory_checkpoints);
        if (memory.chosen) {
          PrintLaunchLine(absl::StrCat("resuming from the in-memory checkpoint after iteration ", memory.iteration,
                                       " ", memory.where));
        }
      }
      continue;
    }
    std::string lost_names;
    for (int64_t node : lost) {
      absl::StrAppend(&lost_names, lost_names.empty() ? "" : ", ", launcher::NodeName(node, options.nodes[node]));
    }
    // Lost nodes beyond the spares: the job continues without them (--elastic=shrink).
    std::optional<Replan> replan;
    if (lost.size() > spares.size()) {
      const int64_t survivors = static_cast<int64_t>(options.nodes.size() - (lost.size() - spares.size()));
      std::string why;
      if (!elastic.shrink) {
        why = spares.empty() ? "no --spare_nodes given" : absl::StrCat("only ", spares.size(), " spare(s) left");
      } else if (survivors < elastic.min_nodes) {
        why = absl::StrCat(survivors, survivors == 1 ? " node survives" : " nodes survive", ", fewer than --min_nodes=",
                           elastic.min_nodes);
      } else {
        absl::StatusOr<Replan> next = ReplanForSurvivors(plan, survivors);
        if (next.ok()) {
          replan = *std::move(next);
        } else {
          why = std::string(next.status().message());
        }
      }
      if (!replan.has_value()) {
        status = absl::Status(status.code(), absl::StrCat(status.message(), "\n  lost: ", lost_names, "; ", why));
        break;
      }
    }
    // The resume point: the newest complete checkpoint, else where this launch started.
    // The failed attempt's report (with its diagnosis), as a restart prints it.
    PrintLaunchLine(std::string(status.message()));
    PendingRecovery next;
    next.failed_at = session->failed_at();
    next.ended_at = ended_at;
    next.probed_at = probed_at;
    proto::Recovery& recovery = next.recovery;
    recovery.set_from("disk");
    absl::StatusOr<ResumePoint> point = NewestResumePoint(options.checkpoint_dir);
    if (point.ok()) {
      for (const std::string& warning : point->warnings) PrintLaunchLine(absl::StrCat("warning: ", warning));
      options.resume_from = point->checkpoint;
      recovery.set_checkpoint(point->checkpoint);
      recovery.set_iteration(point->iteration);
    } else if (!options.resume_from.empty()) {
      absl::StatusOr<ResumePoint> start = NewestResumePoint(options.resume_from);
      if (start.ok()) {
        recovery.set_checkpoint(start->checkpoint);
        recovery.set_iteration(start->iteration);
      }
    } else {
      recovery.set_from("start");  // No checkpoint yet: the job trains again from iteration 0.
    }
    if (replan.has_value()) {
      // A re-planned job resumes from disk: the in-memory parts are per node of the old
      // layout, and the resume holders list one daemon per node of the new one.
      options.memory_checkpoints.set_memory_resume_iteration(0);
      options.memory_checkpoints.clear_memory_resume_holders();
    } else {
      // In memory, when a checkpoint there is at least as new: the lost nodes' parts
      // come from the replicas on the next nodes' daemons.
      std::vector<std::string> answering;
      for (size_t i = 0; i < answers.size(); ++i) {
        if (answers[i].ok()) answering.push_back(options.nodes[i]);
      }
      const MemoryChoice memory = ChooseMemoryResume(
          answering, options.nodes, recovery.checkpoint().empty() ? -1 : recovery.iteration(), base_job_id,
          options.token, options.tls_ca_file, &options.memory_checkpoints);
      if (memory.chosen) {
        recovery.set_from("memory");
        recovery.set_checkpoint(memory.where);
        recovery.set_iteration(memory.iteration);
      }
    }
    next.iterations_lost = std::max<int64_t>(0, last_iteration + 1 - recovery.iteration());
    std::vector<int64_t> dropped;  // Lost nodes no spare replaces, in increasing order.
    for (int64_t node : lost) {
      proto::Recovery& one = recoveries.emplace_back(recovery);
      one.set_cause(RecoveryCause(status, answers[node].ok()));
      one.set_node(node);
      one.set_node_address(options.nodes[node]);
      if (!answers[node].ok()) {
        // Gone, and its parts with it: the final drop need not wait for it.
        memory_daemons.erase(std::remove(memory_daemons.begin(), memory_daemons.end(), options.nodes[node]),
                             memory_daemons.end());
      }
      if (!spares.empty()) {
        one.set_action(absl::StrCat("spare ", spares.front(), " takes its place"));
        options.nodes[node] = spares.front();
        memory_daemons.push_back(spares.front());
        spares.erase(spares.begin());
      } else {
        one.set_action(replan->action);
        dropped.push_back(node);
      }
      PrintLaunchLine(absl::StrCat("recovery: ", RecoveryText(one)));
    }
    if (replan.has_value()) {
      // The survivors keep their order (node ranks close up); the new plan was verified.
      for (auto node = dropped.rbegin(); node != dropped.rend(); ++node) options.nodes.erase(options.nodes.begin() + *node);
      // A smaller dp than the survivors hold (the batch divides only by it: shrink_rule.h)
      // runs on the first survivors; the action names the idle ones.
      if (replan->nodes > 0 && replan->nodes < static_cast<int64_t>(options.nodes.size())) options.nodes.resize(replan->nodes);
      plan = std::move(replan->plan);
      std::string text = absl::StrCat(replan->action, "; the new plan passed the verifier; its layout (oneflow inspect):");
      for (absl::string_view line : absl::StrSplit(replan->layout_text, '\n', absl::SkipEmpty())) {
        absl::StrAppend(&text, "\n  ", line);
      }
      PrintLaunchLine(text);
    }
    next.recovery = recoveries.back();
    pending_recovery = std::move(next);
    options.recoveries = recoveries;
  }
  reporter->Finish();
  if (status.ok()) {
    // The plan the last attempt ran (a shrunk job's own).
    const std::string line = actors::PredictedStepLine(plan, measured);
    if (!line.empty()) PrintLaunchLine(line.substr(0, line.size() - 1));
  }
  if (memory_every > 0) {
    // The parts are of no use once the launch ended; a lost daemon took its own along.
    DropMemoryCheckpoints(memory_daemons, base_job_id, options.token, options.tls_ca_file, kProbeTimeout);
  }
  if (status.ok() && !trace_path.empty()) {
    // The acts name actors of every node's devices by Plan.devices index: one trace, as
    // `oneflow run --trace` writes for a whole cluster in one process.
    std::sort(acts.begin(), acts.end(), [](const actors::ActRecord& a, const actors::ActRecord& b) {
      return a.start_ns < b.start_ns;
    });
    OF_RETURN_IF_ERROR(actors::WriteChromeTrace(trace_path, plan, acts));
  }
  return status;
}

}  // namespace

Subcommand LaunchSubcommand() {
  Subcommand command;
  command.name = "launch";
  command.arguments = "PLAN";
  command.flag_usage =
      "--nodes=HOST:PORT,... --token_file=F [--iters=N] [--metrics=FILE] [--tls_ca=F] "
      "[--collective_timeout_s=S] [--transport=ucx|gloo] [--communication_priority_levels=N] [--job_id=ID] [--checkpoint_dir=DIR --checkpoint_every=N "
      "[--keep_checkpoints=K] [--keep_checkpoint_every=N]] "
      "[--resume_from=DIR] [--max_restarts=K] [--spare_nodes=HOST:PORT,...] [--memory_checkpoint_every=K] [--elastic=off|shrink [--min_nodes=K]] [--hang_seconds=S] [--hang_action=stop|warn] [--slow_factor=F] "
      "[--diagnose_on_failure=false] [--trace=FILE.json]";
  command.summary = "run a plan on a cluster through the oneflowd daemons of its nodes";
  command.flags = {"nodes",  "token_file",     "iters",            "metrics",    "tls_ca", "collective_timeout_s",
                   "transport", "communication_priority_levels", "job_id", "checkpoint_dir", "checkpoint_every", "resume_from",
                   "max_restarts", "hang_seconds", "hang_action", "slow_factor", "diagnose_on_failure", "trace",
                   "keep_checkpoints", "keep_checkpoint_every", "spare_nodes", "memory_checkpoint_every", "elastic",
                   "min_nodes"};
  command.flag_help = {{"trace", "After the job finished, write every node's acts as one Chrome/Perfetto trace (JSON) here."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunLaunch;
  return command;
}

}  // namespace oneflow::cli
