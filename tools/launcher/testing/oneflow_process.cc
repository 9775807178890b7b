#include "tools/launcher/testing/oneflow_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "absl/time/clock.h"
#include "glog/logging.h"
#include "plan/plan_io.h"
#include "tools/launcher/testing/daemon_process.h"

extern char** environ;

namespace oneflow::launcher::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

OneflowProcess::OneflowProcess(std::vector<std::string> arguments) {
  const std::string directory = TestDirectory("oneflow");
  stdout_file_ = directory + "/stdout";
  stderr_file_ = directory + "/stderr";
  arguments.insert(arguments.begin(), kOneflowBinary);
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int spawned = posix_spawn(&pid_, kOneflowBinary, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CHECK_EQ(spawned, 0) << "cannot start " << kOneflowBinary << " (is //tools/cli:oneflow in the test's data?)";
}

OneflowProcess::~OneflowProcess() {
  if (!exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int OneflowProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return -1;
}

void OneflowProcess::Signal(int signal) const { kill(pid_, signal); }
std::string OneflowProcess::Stdout() const { return ReadFile(stdout_file_); }
std::string OneflowProcess::Stderr() const { return ReadFile(stderr_file_); }

std::vector<pid_t> OneflowProcess::WorkerPids(size_t count) const {
  std::vector<pid_t> pids;
  for (int i = 0; i < 1000 && pids.size() < count; ++i) {
    pids.clear();
    const std::string text = Stderr();
    static const std::regex pattern(R"(\[node [0-9]+\] fake worker pid ([0-9]+) on node)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it) {
      pids.push_back(std::stoi((*it)[1]));
    }
    if (pids.size() < count) absl::SleepFor(absl::Milliseconds(20));
  }
  return pids;
}

std::vector<std::string> LaunchArguments(const proto::Plan& plan, std::vector<std::string> flags) {
  const std::string plan_file = TestDirectory("launch") + "/job.plan";
  const absl::Status written = WritePlanFile(plan_file, plan);
  CHECK(written.ok()) << written;
  std::vector<std::string> arguments = {"launch", plan_file};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  return arguments;
}

OneflowResult RunOneflow(std::vector<std::string> arguments, absl::Duration timeout) {
  OneflowProcess process(std::move(arguments));
  OneflowResult result;
  result.exit_code = process.Wait(timeout);
  result.out = process.Stdout();
  result.err = process.Stderr();
  return result;
}

}  // namespace oneflow::launcher::testing
