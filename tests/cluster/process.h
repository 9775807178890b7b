// Child processes for the multi-process tests: start a binary with arguments and extra
// environment, collect its stdout and stderr lines as they come, wait with a deadline,
// and find processes by command line (leftover workers).
#ifndef TESTS_CLUSTER_PROCESS_H_
#define TESTS_CLUSTER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "oneflow_core/files/file_descriptor.h"

namespace oneflow::testing {

class Process {
 public:
  // Starts `argv[0]` with `argv` and the test's environment plus `environment`.
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment = {});
  // Kills (SIGKILL) and reaps the process if it still runs.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal_number) const;

  // Waits until the process ended and its output was read to the end (up to 5 s more
  // for that); false when `timeout` passed before it ended.
  bool Wait(std::chrono::milliseconds timeout);
  // After Wait: the exit code, or 128 + signal.
  int exit_code() const { return exit_code_; }
  // After Wait: the most memory the process ever had resident (its exit accounting,
  // ru_maxrss: the VmHWM of oneflow_core/process_memory.h).
  int64_t peak_resident_bytes() const { return peak_resident_bytes_; }

  // Waits for a stdout line for which `match` holds; returns it, or nothing at timeout
  // or when the stream ended.
  std::optional<std::string> WaitForLine(const std::function<bool(const std::string&)>& match,
                                         std::chrono::milliseconds timeout);
  std::vector<std::string> StdoutLines();
  std::string Stderr();

 private:
  void Reader(FileDescriptor pipe, bool is_stdout);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  int64_t peak_resident_bytes_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> stdout_lines_;
  std::string stderr_;
  bool stdout_open_ = true;
  bool stderr_open_ = true;
  std::thread stdout_thread_, stderr_thread_;
};

// Pids of live processes (not zombies) whose command line contains `needle`.
std::vector<pid_t> ProcessesWithArgument(const std::string& needle);

// A TCP port on 127.0.0.1 that nothing listens on now, below Linux's ephemeral range
// (32768+), so no socket another process opens meanwhile (Gloo's and gRPC's listeners
// take ephemeral ports) can take it before the caller's server binds it.
int UnusedLocalPort();

// True when `pid` exists and is a zombie or running; false when gone.
bool ProcessExists(pid_t pid);

}  // namespace oneflow::testing

#endif  // TESTS_CLUSTER_PROCESS_H_
