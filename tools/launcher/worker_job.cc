// WorkerJob's fork, supervision and event pump: the worker's events pipe and output
// become queued events, ending in exactly one terminal event. What the daemon learns
// from outside the running worker (/proc stop sampling, heartbeats, dumps) is in
// worker_job_observation.cc.
#include "tools/launcher/worker_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "oneflow_core/process_memory.h"
#include "oneflow_core/wait_until.h"
#include "tools/launcher/worker_events.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {
namespace {

// Events kept for a slow reader before the worker's output lines and metrics are dropped
// (the terminal event is always kept).
constexpr size_t kMaxQueuedEvents = 10000;
// A line longer than this is passed on in pieces.
constexpr size_t kMaxLineBytes = 64 << 10;
// How long the pipes are drained after the worker exited.
constexpr absl::Duration kDrainAfterExit = absl::Seconds(2);

std::string SignalText(int signal) {
  const char* name = strsignal(signal);
  return absl::StrCat("signal ", signal, " (", name == nullptr ? "unknown" : name, ")");
}

// Reads what is available from a non-blocking `fd` into `out`; false at EOF or error.
bool ReadAvailable(int fd, std::string* out) {
  char buffer[65536];
  while (true) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      out->append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

}  // namespace

WorkerJob::WorkerJob(WorkerJobConfig config) : config_(std::move(config)) {}

absl::StatusOr<std::unique_ptr<WorkerJob>> WorkerJob::Start(WorkerJobConfig config) {
  auto job = std::unique_ptr<WorkerJob>(new WorkerJob(std::move(config)));
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot start the worker: pipe2: ", std::strerror(errno)));
  }
  job->wake_read_ = FileDescriptor(wake[0]);
  job->wake_write_ = FileDescriptor(wake[1]);
  if (!job->config_.log_file.empty()) {
    // Best effort: the log is a debugging aid, the stream carries the same lines.
    job->log_file_ = FileDescriptor(open(job->config_.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  }
  absl::Status start_status;
  absl::Notification started;
  job->supervisor_ = std::thread(&WorkerJob::Supervise, job.get(), &start_status, &started);
  started.WaitForNotification();
  if (!start_status.ok()) {
    job->supervisor_.join();
    return start_status;
  }
  return job;
}

WorkerJob::~WorkerJob() {
  Cancel("the daemon is forgetting the job");
  if (supervisor_.joinable()) supervisor_.join();
  if (killer_.joinable()) killer_.join();
  if (stop_sampler_.joinable()) stop_sampler_.join();  // Ends with the job (done_).
}

void WorkerJob::Supervise(absl::Status* start_status, absl::Notification* started) {
  absl::StatusOr<SpawnedWorker> spawned = SpawnWorker(config_.command);
  if (!spawned.ok()) {
    *start_status = spawned.status();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      state_ = proto::JobStatus::FAILED;
      reason_ = std::string(spawned.status().message());
      end_time_ = absl::Now();
    }
    done_.Notify();
    started->Notify();
    return;
  }
  const pid_t pid = spawned->pid;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pid_ = pid;
    state_ = proto::JobStatus::RUNNING;
    start_time_ = absl::Now();
    proto::JobEvent event;
    event.mutable_started()->set_worker_pid(pid);
    Push(std::move(event));
  }
  FileDescriptor events = std::move(spawned->events);
  FileDescriptor output = std::move(spawned->output);
  started->Notify();  // Start's locals are gone after this.

  std::thread pump(&WorkerJob::PumpPipes, this, std::move(events), std::move(output));
  siginfo_t info;
  while (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    leader_exited_ = true;
  }
  // Whatever the worker started and left behind goes with it.
  kill(-pid, SIGKILL);
  const char byte = 1;
  ssize_t ignored = write(wake_write_.get(), &byte, 1);
  (void)ignored;
  pump.join();
  int wait_status = 0;
  struct rusage usage {};
  while (wait4(pid, &wait_status, 0, &usage) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_peak_resident_bytes_ = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux counts kilobytes.
  }
  Finish(wait_status);
}

void WorkerJob::PumpPipes(FileDescriptor events, FileDescriptor output) {
  WorkerEventParser parser;
  bool parser_stuck = false;
  std::string line_buffer;
  absl::Time drain_deadline = absl::InfiniteFuture();
  while (events.valid() || output.valid()) {
    struct pollfd fds[3] = {{events.get(), POLLIN, 0}, {output.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    int timeout_ms = -1;
    if (drain_deadline != absl::InfiniteFuture()) {
      const absl::Duration left = drain_deadline - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    }
    if (poll(fds, 3, timeout_ms) < 0 && errno != EINTR) break;
    if (fds[2].revents != 0) {
      char drain[16];
      while (read(wake_read_.get(), drain, sizeof(drain)) > 0) {
      }
      if (drain_deadline == absl::InfiniteFuture()) drain_deadline = absl::Now() + kDrainAfterExit;
    }
    if (events.valid() && fds[0].revents != 0) {
      std::string bytes;
      const bool open = ReadAvailable(events.get(), &bytes);
      if (!parser_stuck) {
        parser.Append(bytes);
        while (true) {
          absl::StatusOr<std::optional<proto::JobEvent>> next = parser.Next();
          if (!next.ok()) {
            parser_stuck = true;
            OnOutputLine(absl::StrCat("[oneflowd] ignoring the rest of the worker's events pipe: ",
                                      next.status().message()));
            break;
          }
          if (!next->has_value()) break;
          OnWorkerEvent(std::move(**next));
        }
      }
      if (!open) events.Reset();
    }
    if (output.valid() && fds[1].revents != 0) {
      const bool open = ReadAvailable(output.get(), &line_buffer);
      size_t start = 0;
      for (size_t newline; (newline = line_buffer.find('\n', start)) != std::string::npos; start = newline + 1) {
        OnOutputLine(line_buffer.substr(start, newline - start));
      }
      line_buffer.erase(0, start);
      while (line_buffer.size() > kMaxLineBytes) {
        OnOutputLine(line_buffer.substr(0, kMaxLineBytes));
        line_buffer.erase(0, kMaxLineBytes);
      }
      if (!open) {
        if (!line_buffer.empty()) OnOutputLine(std::move(line_buffer));
        line_buffer.clear();
        output.Reset();
      }
    }
  }
  if (!line_buffer.empty()) OnOutputLine(std::move(line_buffer));
}

void WorkerJob::OnWorkerEvent(proto::JobEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (event.event_case()) {
    case proto::JobEvent::kMetrics:
      last_iteration_ = event.metrics().iteration();
      Push(std::move(event));
      break;
    case proto::JobEvent::kLog:
    case proto::JobEvent::kTrace:
    case proto::JobEvent::kLinkMeasurements:
      Push(std::move(event));
      break;
    case proto::JobEvent::kFinished:
    case proto::JobEvent::kFailed:
      // At most one counts; the daemon composes the terminal event once the worker is
      // reaped, adding its exit status and the status file's progress.
      if (!worker_outcome_.has_value()) {
        worker_outcome_ = std::move(event);
        outcome_before_cancel_ = !cancel_reason_.has_value();
      }
      break;
    default:
      break;  // Started comes from the daemon; an empty event means nothing.
  }
}

void WorkerJob::OnOutputLine(std::string line) {
  if (log_file_.valid()) {
    const std::string with_newline = absl::StrCat(line, "\n");
    ssize_t ignored = write(log_file_.get(), with_newline.data(), with_newline.size());
    (void)ignored;
  }
  proto::JobEvent event;
  event.mutable_log()->set_text(std::move(line));
  std::lock_guard<std::mutex> lock(mutex_);
  Push(std::move(event));
}

void WorkerJob::Push(proto::JobEvent event) {
  if (!queueing_) return;
  if (event.has_log() && queue_.size() >= kMaxQueuedEvents) {
    ++dropped_lines_;
    return;
  }
  // Metrics too: a client that stays connected but stops reading (its output blocked)
  // must not make the daemon keep every iteration's event.
  if (event.has_metrics() && queue_.size() >= kMaxQueuedEvents) {
    ++dropped_metrics_;
    return;
  }
  event.set_job_id(config_.job_id);
  event.set_node_rank(config_.node_rank);
  queue_.push_back(std::move(event));
  queue_changed_.notify_all();
}

void WorkerJob::Finish(int wait_status) {
  std::vector<proto::DeviceProgress> progress = ReadWorkerStatusFile(config_.status_file, config_.node_devices);
  const int signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  const int exit_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (dropped_lines_ > 0) {
    proto::JobEvent note;
    note.mutable_log()->set_text(absl::StrCat("[oneflowd] ", dropped_lines_,
                                              " lines of worker output were dropped (the client read too "
                                              "slowly); the log file has them all"));
    queue_.push_back(note);
  }
  if (dropped_metrics_ > 0) {
    proto::JobEvent note;
    note.mutable_log()->set_text(absl::StrCat("[oneflowd] the metrics of ", dropped_metrics_,
                                              " iterations were dropped (the client read too slowly); the "
                                              "worker's --metrics file, if any, has them all"));
    queue_.push_back(note);
  }
  if (progress.empty() && worker_outcome_.has_value()) {
    const auto& reported = worker_outcome_->has_finished() ? worker_outcome_->finished().progress()
                                                           : worker_outcome_->failed().progress();
    progress.assign(reported.begin(), reported.end());
  }
  const std::string worker = absl::StrCat("node ", config_.node_rank, " worker (pid ", pid_, ")");
  proto::JobEvent terminal;
  const bool said_finished = worker_outcome_.has_value() && worker_outcome_->has_finished();
  if (said_finished && signal == 0 && exit_code == 0) {
    for (const proto::DeviceProgress& device : progress) *terminal.mutable_finished()->add_progress() = device;
    state_ = proto::JobStatus::FINISHED;
    reason_.clear();
  } else {
    proto::JobEvent::Failed* failed = terminal.mutable_failed();
    const bool said_failed = worker_outcome_.has_value() && worker_outcome_->has_failed();
    const bool cancelled = cancel_reason_.has_value() && !(said_failed && outcome_before_cancel_);
    std::string reason;
    if (cancelled) {
      reason = absl::StrCat(worker, " was cancelled (", *cancel_reason_, ")");
      if (signal != 0) absl::StrAppend(&reason, "; it ended by ", SignalText(signal));
    } else if (said_failed && !worker_outcome_->failed().reason().empty()) {
      reason = worker_outcome_->failed().reason();
      if (signal != 0) absl::StrAppend(&reason, " (then killed by ", SignalText(signal), ")");
    } else if (signal != 0) {
      reason = absl::StrCat(worker, " was killed by ", SignalText(signal));
    } else if (exit_code != 0) {
      reason = absl::StrCat(worker, " exited with code ", exit_code);
    } else {
      reason = absl::StrCat(worker, " exited with code 0 without reporting that the job finished");
    }
    failed->set_reason(reason);
    failed->set_failed_rank(config_.node_rank);
    failed->set_signal(signal);
    failed->set_exit_code(exit_code);
    failed->set_cancelled(cancelled);
    failed->set_caused_by_peer(!cancelled && said_failed && worker_outcome_->failed().caused_by_peer());
    for (const proto::DeviceProgress& device : progress) *failed->add_progress() = device;
    state_ = cancelled ? proto::JobStatus::CANCELLED : proto::JobStatus::FAILED;
    reason_ = reason;
  }
  terminal.set_job_id(config_.job_id);
  terminal.set_node_rank(config_.node_rank);
  queue_.push_back(std::move(terminal));  // Kept even when nobody reads: it is the job's record.
  final_progress_ = std::move(progress);
  end_time_ = absl::Now();
  queue_changed_.notify_all();
  done_.Notify();
}

std::optional<proto::JobEvent> WorkerJob::NextEvent(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return !queue_.empty(); };
  if (!WaitUntil(queue_changed_, lock, absl::Now() + timeout, ready)) return std::nullopt;
  proto::JobEvent event = std::move(queue_.front());
  queue_.pop_front();
  return event;
}

void WorkerJob::StopQueueing() {
  std::lock_guard<std::mutex> lock(mutex_);
  queueing_ = false;
  queue_.clear();
}

void WorkerJob::Cancel(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_.HasBeenNotified() || cancel_reason_.has_value() || pid_ <= 0) return;
  cancel_reason_ = why;
  if (leader_exited_) return;  // Ending by itself; the supervisor kills the rest.
  kill(-pid_, SIGTERM);
  // A stopped worker (SIGSTOP) handles the SIGTERM once continued, rather than waiting
  // for the SIGKILL.
  kill(-pid_, SIGCONT);
  killer_ = std::thread([this] {
    if (done_.WaitForNotificationWithTimeout(kCancelGrace)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!leader_exited_) kill(-pid_, SIGKILL);
  });
}

bool WorkerJob::done() const { return done_.HasBeenNotified(); }

absl::Time WorkerJob::end_time() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return end_time_;
}

proto::JobStatus WorkerJob::Status() const {
  // Read before taking the lock: the file is the worker's, and a read is a system call.
  // A job that ends meanwhile reports its final progress below instead.
  std::vector<proto::DeviceProgress> live = ReadWorkerStatusFile(config_.status_file, config_.node_devices);
  pid_t running = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!leader_exited_) running = pid_;
  }
  // NOT_FOUND when it exited meanwhile: the peak from its reaping is reported below.
  absl::StatusOr<ProcessMemory> memory = absl::NotFoundError("not running");
  if (running > 0) memory = ReadProcessMemory(running);
  std::lock_guard<std::mutex> lock(mutex_);
  proto::JobStatus status;
  const bool ended = done_.HasBeenNotified();
  for (const proto::DeviceProgress& device : ended ? final_progress_ : live) *status.add_progress() = device;
  if (start_time_ != absl::InfinitePast()) status.set_start_unix_ms(absl::ToUnixMillis(start_time_));
  if (end_time_ != absl::InfiniteFuture()) status.set_end_unix_ms(absl::ToUnixMillis(end_time_));
  status.set_iterations(config_.iterations);
  status.set_job_id(config_.job_id);
  status.set_state(state_);
  status.set_last_iteration(last_iteration_);
  status.set_reason(reason_);
  status.set_node_rank(config_.node_rank);
  status.set_worker_pid(pid_);
  for (const proto::Recovery& recovery : config_.recoveries) *status.add_recoveries() = recovery;
  if (worker_peak_resident_bytes_ > 0) {
    status.set_worker_peak_resident_bytes(worker_peak_resident_bytes_);
  } else if (memory.ok()) {
    status.set_worker_resident_bytes(memory->resident_bytes);
    status.set_worker_peak_resident_bytes(memory->peak_resident_bytes);
  }
  return status;
}

}  // namespace oneflow::launcher
