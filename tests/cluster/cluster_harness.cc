#include "tests/cluster/cluster_harness.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string CommandLine(pid_t pid) {
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
}

}  // namespace

std::string Runfile(const std::string& path) {
  char cwd[4096];
  return std::string(getcwd(cwd, sizeof(cwd))) + "/" + path;
}

std::string TempPath(const std::string& name) { return std::string(getenv("TEST_TMPDIR")) + "/" + name; }

std::string CompilePlan(const std::string& example, const std::vector<std::string>& flags, const std::string& name) {
  const std::string out = TempPath(name + ".plan");
  std::vector<std::string> argv = {Runfile("examples/" + example + "/" + example)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--plan_out=" + out);
  Process compile(argv);
  EXPECT_TRUE(compile.Wait(milliseconds(60000))) << example << " " << absl::StrJoin(flags, " ");
  EXPECT_EQ(compile.exit_code(), 0) << example << " " << absl::StrJoin(flags, " ") << ": " << compile.Stderr();
  return out;
}

std::vector<double> Losses(const std::vector<std::string>& lines) {
  std::vector<double> losses;
  for (const std::string& line : lines) {
    const size_t at = line.find("\"loss\": ");
    if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 8)));
  }
  return losses;
}

int IterationOf(const std::string& line) {
  const size_t at = line.find("{\"iter\": ");
  return at == std::string::npos ? -1 : std::stoi(line.substr(at + 9));
}

std::vector<double> RunInOneProcess(const std::string& plan, int iterations) {
  Process run({Runfile("tools/cli/oneflow"), "run", plan, absl::StrCat("--iters=", iterations)});
  EXPECT_TRUE(run.Wait(milliseconds(120000))) << "oneflow run " << plan;
  EXPECT_EQ(run.exit_code(), 0) << "oneflow run " << plan << ": " << run.Stderr();
  return Losses(run.StdoutLines());
}


Daemons::Daemons(int count, const std::vector<std::string>& extra_flags) {
  std::vector<std::string> flags = {"--worker_binary=" + Runfile("tools/worker/oneflow_worker")};
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::unique_ptr<launcher::testing::DaemonProcess>> daemon =
        launcher::testing::DaemonProcess::Start(absl::StrCat("daemon", next_id_++), flags);
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    if (daemon.ok()) daemons_.push_back(*std::move(daemon));
  }
}

std::string Daemons::Nodes(int first, int count) const {
  std::vector<std::string> parts;
  for (int i = first; i < (count < 0 ? static_cast<int>(daemons_.size()) : first + count); ++i) {
    parts.push_back(daemons_[i]->address());
  }
  return "--nodes=" + absl::StrJoin(parts, ",");
}

std::unique_ptr<Process> Launch(const Daemons& daemons, const std::string& plan, int iterations,
                                const std::string& job_id, std::vector<std::string> extra, const std::string& nodes) {
  std::vector<std::string> argv = {Runfile("tools/cli/oneflow"),
                                   "launch",
                                   nodes.empty() ? daemons.Nodes() : nodes,
                                   "--token_file=" + daemons.token_file(),
                                   "--job_id=" + job_id,
                                   plan,
                                   absl::StrCat("--iters=", iterations)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Process>(argv);
}

pid_t WorkerPid(const std::string& job_id, int node) {
  for (pid_t pid : ProcessesWithArgument("--job_id=" + job_id)) {
    const std::string arguments = CommandLine(pid);
    if (arguments.find("oneflow_worker") != std::string::npos &&
        arguments.find(absl::StrCat("--node_rank=", node, std::string(1, '\0'))) != std::string::npos) {
      return pid;
    }
  }
  return -1;
}

bool NoWorkersLeft(const std::string& job_id, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    bool any = false;
    for (pid_t pid : ProcessesWithArgument("--job_id=" + job_id)) {
      any |= CommandLine(pid).find("oneflow_worker") != std::string::npos;
    }
    if (!any) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

int BenchFlag(const char* name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (size_t i = 1; i < ::testing::internal::GetArgvs().size(); ++i) {
    const std::string argument = ::testing::internal::GetArgvs()[i];
    if (argument.rfind(prefix, 0) == 0) return std::atoi(argument.c_str() + prefix.size());
  }
  return fallback;
}

std::string TwoNodeMlpPlan() {
  return CompilePlan("mlp",
                     {"--batch=64", "--hidden=128", "--layers=3", "--compression=off", "--nodes=2",
                      "--devices_per_node=1", "--dp=2"},
                     "mlp-2x1");
}

double SecondsUntilStderrHas(Process& launch, const std::string& needle, std::chrono::steady_clock::time_point since,
                             std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (launch.Stderr().find(needle) != std::string::npos) {
      return std::chrono::duration<double>(Clock::now() - since).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

bool WaitForStderr(Process& launch, const std::string& needle) {
  return SecondsUntilStderrHas(launch, needle, std::chrono::steady_clock::now(), std::chrono::milliseconds(60000)) >= 0;
}

bool WaitForIteration(Process& launch, int iteration) {
  return launch
      .WaitForLine([iteration](const std::string& line) { return IterationOf(line) >= iteration; },
                   std::chrono::milliseconds(60000))
      .has_value();
}

std::string JobId(const std::string& name) { return absl::StrCat(name, "-", getpid()); }

std::string JsonValue(const std::string& line, const std::string& key) {
  const std::string marker = "\"" + key + "\": ";
  const size_t at = line.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  return line.substr(begin, line.find_first_of(",}", begin) - begin);
}

}  // namespace oneflow::testing
