// WorkerJob's view of a running worker from outside, through /proc and signals: the
// stop sampler (is the worker SIGSTOPped, and where), the heartbeat the daemon sends, and
// the flight recorder dump on request. The fork, the supervision and the event pump are
// in worker_job.cc; the class and its contracts in worker_job.h.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/launcher/worker_job.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {
namespace {

// The process's state letter from /proc/PID/stat ('R', 'S', 'T' stopped, ...); 0 if unknown.
char ProcessState(pid_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : 0;
}

// The state letter from an open /proc/PID/stat (re-read from offset 0 on every call).
char ProcessState(const FileDescriptor& stat) {
  char text[512];
  const ssize_t got = pread(stat.get(), text, sizeof(text) - 1, 0);
  if (got <= 0) return 0;
  const std::string_view view(text, static_cast<size_t>(got));
  const size_t paren = view.rfind(')');
  return paren != std::string_view::npos && paren + 2 < view.size() ? view[paren + 2] : 0;
}

// Whether `pid` catches `signal` (SigCgt in /proc/PID/status): the worker installs its
// SIGUSR1 watcher early, but a SIGUSR1 before that would kill it.
bool CatchesSignal(pid_t pid, int signal) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (mask >> (signal - 1)) & 1;
  }
  return false;
}

int64_t ModifiedNs(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return -1;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
}

}  // namespace

void WorkerJob::SampleStops(pid_t pid) {
  pthread_setname_np(pthread_self(), "of-stop-sample");  // For bench/diagnosis.
  const FileDescriptor stat(open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!stat.valid()) return;
  // Random intervals, so that a periodic SIGSTOP/SIGCONT cycle cannot hide between
  // samples: 100-300 ms while the worker has not been seen stopped (a stop that costs a
  // rank its pace is seen within a second or two), 20-60 ms for the 10 s after a sample
  // that found it stopped. Each sample charges the time since the previous one, an
  // unbiased estimate of the time stopped at either rate.
  std::minstd_rand random(static_cast<uint32_t>(pid));
  std::uniform_int_distribution<int> spread_us(0, 20000);
  absl::Time last = absl::Now();
  absl::Time fast_until = absl::InfinitePast();
  while (true) {
    const bool fast = last < fast_until;
    const absl::Duration interval = absl::Microseconds((fast ? 20000 : 100000) + spread_us(random) * (fast ? 2 : 10));
    if (done_.WaitForNotificationWithTimeout(interval)) break;
    const absl::Time now = absl::Now();
    // At most 300 ms per sample: a daemon that was not scheduled itself saw nothing.
    const int64_t elapsed_ns = std::min<int64_t>(absl::ToInt64Nanoseconds(now - last), 300000000);
    last = now;
    if (ProcessState(stat) != 'T') continue;
    fast_until = now + absl::Seconds(10);
    // A stopped worker's file does not change: this is where its devices stopped.
    const std::vector<proto::DeviceProgress> progress = ReadWorkerStatusFile(config_.status_file, config_.node_devices);
    std::lock_guard<std::mutex> lock(mutex_);
    if (leader_exited_) break;  // The pid may be reaped and reused from here on.
    stopped_time_.ChargeStopped(progress, elapsed_ns);
  }
}

std::optional<proto::JobEvent> WorkerJob::Heartbeat() {
  WorkerStatusSnapshot snapshot = ReadWorkerStatus(config_.status_file, config_.node_devices);
  const absl::Time now = absl::Now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_.HasBeenNotified() || leader_exited_ || pid_ <= 0) return std::nullopt;
  if (!sampling_stops_) {
    sampling_stops_ = true;
    stop_sampler_ = std::thread(&WorkerJob::SampleStops, this, pid_);
  }
  stopped_time_.Correct(&snapshot.progress);
  proto::JobEvent event;
  proto::JobEvent::Heartbeat* beat = event.mutable_heartbeat();
  for (const proto::DeviceProgress& device : snapshot.progress) *beat->add_progress() = device;
  beat->set_sampled_unix_ms(absl::ToUnixMillis(now));
  if (snapshot.heartbeat != last_beat_ || beat_changed_ == absl::InfinitePast()) {
    last_beat_ = snapshot.heartbeat;
    beat_changed_ = now;
  }
  // Before the worker created its file there is no heartbeat to miss.
  beat->set_worker_silent_ms(snapshot.present ? absl::ToInt64Milliseconds(now - beat_changed_) : 0);
  beat->set_worker_stopped(ProcessState(pid_) == 'T');
  beat->set_worker_stopped_since_last_beat(beat->worker_stopped() ||
                                           stopped_time_.stopped_ns() > stopped_ns_at_last_beat_);
  stopped_ns_at_last_beat_ = stopped_time_.stopped_ns();
  if (snapshot.checkpoint_wait_since_unix_ms > 0) {
    beat->set_worker_checkpoint_wait_ms(
        std::max<int64_t>(0, absl::ToUnixMillis(now) - snapshot.checkpoint_wait_since_unix_ms));
  }
  event.set_job_id(config_.job_id);
  event.set_node_rank(config_.node_rank);
  return event;
}

WorkerDump WorkerJob::RequestDump(absl::Duration timeout) {
  WorkerDump dump;
  dump.path = config_.flight_dump_file;
  const int64_t before = ModifiedNs(dump.path);
  bool asked = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_.HasBeenNotified() && !leader_exited_ && pid_ > 0) {
      if (ProcessState(pid_) == 'T') {
        dump.note = absl::StrCat("node ", config_.node_rank, " worker (pid ", pid_,
                                 ") is stopped (SIGSTOP?): it cannot write a dump");
      } else if (!CatchesSignal(pid_, SIGUSR1)) {
        dump.note = absl::StrCat("node ", config_.node_rank, " worker (pid ", pid_,
                                 ") does not handle SIGUSR1 yet (still starting)");
      } else {
        asked = kill(pid_, SIGUSR1) == 0;
      }
    }
  }
  if (asked) {
    const absl::Time deadline = absl::Now() + timeout;
    while (ModifiedNs(dump.path) == before && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
    if (ModifiedNs(dump.path) == before) {
      dump.note = absl::StrCat("node ", config_.node_rank, " worker wrote no dump within ",
                               absl::FormatDuration(timeout), " of SIGUSR1");
    }
  }
  std::ifstream file(dump.path);
  if (file) {
    std::stringstream text;
    text << file.rdbuf();
    dump.json = text.str();
  } else if (dump.note.empty()) {
    dump.note = absl::StrCat("node ", config_.node_rank, " worker left no flight recorder dump (",
                             done_.HasBeenNotified() ? "it ended without one: a signal or a cancel"
                                                     : "none written yet",
                             ")");
  }
  return dump;
}

}  // namespace oneflow::launcher
