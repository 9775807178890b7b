// The real `oneflow` CLI in the launcher's tests, run as a user runs it: a process whose
// stdout and stderr go to files. The binary's path is relative to the test's runfiles
// directory, so a test target lists //tools/cli:oneflow in `data`.
#ifndef TOOLS_LAUNCHER_TESTING_ONEFLOW_PROCESS_H_
#define TOOLS_LAUNCHER_TESTING_ONEFLOW_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher::testing {

inline constexpr char kOneflowBinary[] = "tools/cli/oneflow";

class OneflowProcess {
 public:
  // Starts `oneflow ARGUMENTS...`.
  explicit OneflowProcess(std::vector<std::string> arguments);
  // SIGKILL if still running.
  ~OneflowProcess();
  OneflowProcess(const OneflowProcess&) = delete;
  OneflowProcess& operator=(const OneflowProcess&) = delete;

  // The exit code (-1: still running after `timeout`, or killed by a signal).
  int Wait(absl::Duration timeout = absl::Seconds(40));
  void Signal(int signal) const;
  std::string Stdout() const;
  std::string Stderr() const;
  // Waits until stderr has `count` lines "[node N] fake worker pid P on node N" (as
  // `oneflow launch` forwards them) and returns their pids.
  std::vector<pid_t> WorkerPids(size_t count) const;

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string stdout_file_, stderr_file_;
};

// {"launch", PLAN_FILE, flags...}: `plan` written to a fresh file.
std::vector<std::string> LaunchArguments(const proto::Plan& plan, std::vector<std::string> flags);

// `oneflow ARGUMENTS...` run to its end (`timeout` at most).
struct OneflowResult {
  int exit_code = -1;
  std::string out, err;
};
OneflowResult RunOneflow(std::vector<std::string> arguments, absl::Duration timeout = absl::Seconds(40));

}  // namespace oneflow::launcher::testing

#endif  // TOOLS_LAUNCHER_TESTING_ONEFLOW_PROCESS_H_
