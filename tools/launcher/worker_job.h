// One job's worker on this node, from fork to the terminal event.
//
// A supervisor thread forks the worker (so PR_SET_PDEATHSIG is tied to a thread that
// lives exactly as long as the worker, see worker_process.h), waits for it, and composes
// the terminal event. An I/O thread reads the worker's events pipe and its stdout/stderr
// (turned into LogLine events, one per line, and copied to a log file). Events queue up
// here until the Submit stream takes them: Started first, then the worker's metrics and
// logs, then exactly one Finished or Failed.
//
// When the worker ends, whatever is left of its process group is killed, the pipes are
// drained (for at most 2 s, in case a grandchild that left the group holds them open),
// the worker is reaped (no zombies), and its status file is read for DeviceProgress.
#ifndef TOOLS_LAUNCHER_WORKER_JOB_H_
#define TOOLS_LAUNCHER_WORKER_JOB_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "oneflow_core/files/file_descriptor.h"
#include "proto/launcher.pb.h"
#include "tools/launcher/worker_process.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {

// How long a cancelled worker has between SIGTERM and SIGKILL.
inline constexpr absl::Duration kCancelGrace = absl::Seconds(3);

struct WorkerJobConfig {
  std::string job_id;
  int64_t node_rank = 0;
  WorkerCommand command;
  std::string status_file;
  // Devices of this node in the plan: the records the status file should hold.
  int64_t node_devices = 0;
  // A copy of the worker's output for debugging; empty: none.
  std::string log_file;
  // The iterations asked for, reported by Status.
  int64_t iterations = 0;
  // Where the worker writes its flight recorder dump (docs/diagnosis.md).
  std::string flight_dump_file;
  // The launch's recoveries that led to this submission (RunOptions.recoveries),
  // reported by Status.
  std::vector<proto::Recovery> recoveries;
};

// A flight recorder dump fetched from the node (Launcher.Dump).
struct WorkerDump {
  std::string path;
  std::string json;  // Empty: none; `note` says why.
  std::string note;
};

class WorkerJob {
 public:
  // Forks the worker and returns once it runs (its Started event queued), or the reason
  // it could not be started (SpawnWorker's errors).
  static absl::StatusOr<std::unique_ptr<WorkerJob>> Start(WorkerJobConfig config);
  // Cancels a worker still running and waits until it is reaped.
  ~WorkerJob();
  WorkerJob(const WorkerJob&) = delete;
  WorkerJob& operator=(const WorkerJob&) = delete;

  const std::string& job_id() const { return config_.job_id; }
  int64_t node_rank() const { return config_.node_rank; }

  // The next event, waiting up to `timeout`; nullopt when none came. The terminal event
  // is the last one ever returned.
  std::optional<proto::JobEvent> NextEvent(absl::Duration timeout);
  // Nobody reads the events any more (the client went away): stop keeping them.
  void StopQueueing();

  // SIGTERM to the worker's process group, SIGKILL kCancelGrace later if it still runs.
  // `why` ends up in the Failed reason ("cancelled (why)"). No-op once the worker ended.
  void Cancel(const std::string& why);

  bool done() const;
  // True when the job reached its terminal event within `timeout`.
  bool WaitDone(absl::Duration timeout) const { return done_.WaitForNotificationWithTimeout(timeout); }
  // When the terminal event was composed (InfiniteFuture while running).
  absl::Time end_time() const;
  // State, last iteration, pid, times and, while the worker runs, each device's progress
  // read from its status file (after the end, the terminal event's progress).
  proto::JobStatus Status() const;

  // The heartbeat the daemon sends while the worker runs: each device's progress from the
  // status file, how long the worker's own heartbeat word has not changed, and whether
  // the process is stopped. nullopt once the worker exited. The first call starts a
  // thread that samples whether the worker is stopped (at random intervals: 100-300 ms,
  // 20-60 ms once it was seen stopped), so that collective_ns leaves out the time it was
  // stopped inside collectives (StoppedTimeAccount); a job without heartbeats pays
  // nothing for it.
  std::optional<proto::JobEvent> Heartbeat();

  // Asks a running worker for a flight recorder dump (SIGUSR1, when it handles it and is
  // not stopped) and waits up to `timeout` for the file to be rewritten; an ended
  // worker's dump is the one it left. `json` empty when there is none.
  WorkerDump RequestDump(absl::Duration timeout);

 private:
  explicit WorkerJob(WorkerJobConfig config);
  void Supervise(absl::Status* start_status, absl::Notification* started);
  void PumpPipes(FileDescriptor events, FileDescriptor output);
  void OnWorkerEvent(proto::JobEvent event);
  void OnOutputLine(std::string line);
  void Finish(int wait_status);
  void Push(proto::JobEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void SampleStops(pid_t pid);

  const WorkerJobConfig config_;
  FileDescriptor wake_read_, wake_write_;  // The supervisor wakes the I/O thread at exit.
  FileDescriptor log_file_;
  std::thread supervisor_;
  std::thread killer_;  // Cancel's SIGKILL after the grace period.
  std::thread stop_sampler_;  // Started by the first Heartbeat.
  absl::Notification done_;

  mutable std::mutex mutex_;
  std::condition_variable queue_changed_;  // an event was queued
  pid_t pid_ ABSL_GUARDED_BY(mutex_) = 0;
  // The worker (group leader) exited but is not reaped yet, so its pid, which is the
  // group id, cannot have been reused: signalling the group is safe until then only.
  bool leader_exited_ ABSL_GUARDED_BY(mutex_) = false;
  proto::JobStatus::State state_ ABSL_GUARDED_BY(mutex_) = proto::JobStatus::PENDING;
  int64_t last_iteration_ ABSL_GUARDED_BY(mutex_) = -1;
  std::string reason_ ABSL_GUARDED_BY(mutex_);
  std::optional<std::string> cancel_reason_ ABSL_GUARDED_BY(mutex_);
  // The worker's own finished/failed event, and whether it came before any cancel.
  std::optional<proto::JobEvent> worker_outcome_ ABSL_GUARDED_BY(mutex_);
  bool outcome_before_cancel_ ABSL_GUARDED_BY(mutex_) = false;
  std::deque<proto::JobEvent> queue_ ABSL_GUARDED_BY(mutex_);
  bool queueing_ ABSL_GUARDED_BY(mutex_) = true;
  int64_t dropped_lines_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t dropped_metrics_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Time end_time_ ABSL_GUARDED_BY(mutex_) = absl::InfiniteFuture();
  absl::Time start_time_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
  // Heartbeat: the last heartbeat word seen and when it last changed.
  int64_t last_beat_ ABSL_GUARDED_BY(mutex_) = -1;
  absl::Time beat_changed_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
  bool sampling_stops_ ABSL_GUARDED_BY(mutex_) = false;
  StoppedTimeAccount stopped_time_ ABSL_GUARDED_BY(mutex_);
  // stopped_time_.stopped_ns() at the previous heartbeat: more since, and the sampler
  // found the worker stopped in between (Heartbeat.worker_stopped_since_last_beat).
  int64_t stopped_ns_at_last_beat_ ABSL_GUARDED_BY(mutex_) = 0;
  // The worker's peak resident memory from its exit accounting, once reaped.
  int64_t worker_peak_resident_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  // The terminal event's progress, once there is one.
  std::vector<proto::DeviceProgress> final_progress_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_JOB_H_
