// What the multi-process tests share: compiling an example into a plan, the reference
// curve of `oneflow run`, comparing a run's losses with it, real oneflowd daemons running
// the real worker, `oneflow launch` on them, and finding the workers of a job.
//
// Binary paths are relative to the test's runfiles directory, so a test lists
// //examples/..., //tools/cli:oneflow, //tools/launcher:oneflowd and
// //tools/worker:oneflow_worker in `data`.
#ifndef TESTS_CLUSTER_CLUSTER_HARNESS_H_
#define TESTS_CLUSTER_CLUSTER_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cluster/process.h"
#include "tests/loss_curves.h"
#include "tools/launcher/testing/daemon_process.h"

namespace oneflow::testing {

// The absolute path of a runfile (a path relative to the runfiles directory).
std::string Runfile(const std::string& path);
// `name` under TEST_TMPDIR.
std::string TempPath(const std::string& name);

// Compiles examples/<example> into <TEST_TMPDIR>/<name>.plan with `flags` (like
// {"--nodes=2", "--dp=2"}) and returns the plan's path; a failed compile is a test failure.
std::string CompilePlan(const std::string& example, const std::vector<std::string>& flags, const std::string& name);

// The losses of the metrics lines ({"iter": N, "loss": L, ...}) among `lines`, in order.
std::vector<double> Losses(const std::vector<std::string>& lines);
// The iteration of a metrics line; -1 for any other line.
int IterationOf(const std::string& line);

// The losses of `oneflow run PLAN --iters=N`: every device of the plan in this process.
// The reference curve a multi-process run must reproduce.
std::vector<double> RunInOneProcess(const std::string& plan, int iterations);

// Comparisons of losses with a reference: MatchesReference in tests/loss_curves.h.

// Real oneflowd processes (the launcher's test helper) running the real worker. Every
// daemon reads the same token file's token; `extra_flags` go to every daemon (e.g.
// --tls_cert, --tls_key).
class Daemons {
 public:
  explicit Daemons(int count, const std::vector<std::string>& extra_flags = {});
  // "--nodes=A,B,..." for daemons first .. first + count - 1 (count < 0: to the last).
  std::string Nodes(int first = 0, int count = -1) const;
  // The daemons that started (fewer than asked: the test has already failed).
  int size() const { return static_cast<int>(daemons_.size()); }
  std::string address(int i) const { return daemons_[i]->address(); }
  pid_t pid(int i) const { return daemons_[i]->pid(); }
  const std::string& work_dir(int i) const { return daemons_[i]->work_dir(); }
  const std::string& token_file() const { return daemons_[0]->token_file(); }
  std::string Stderr(int i) const { return daemons_[i]->Stderr(); }
  void Signal(int i, int signal_number) { daemons_[i]->Signal(signal_number); }
  bool Alive(int i) { return !daemons_[i]->Wait(absl::Milliseconds(50)).ok(); }

 private:
  static inline int next_id_ = 0;
  std::vector<std::unique_ptr<launcher::testing::DaemonProcess>> daemons_;
};

// Starts `oneflow launch <nodes or all daemons> --token_file=... --job_id=<job_id> PLAN
// --iters=N <extra>`.
std::unique_ptr<Process> Launch(const Daemons& daemons, const std::string& plan, int iterations,
                                const std::string& job_id, std::vector<std::string> extra = {},
                                const std::string& nodes = "");

// For benchmarks built as gtest binaries (bench/restart, bench/diagnosis): the value of
// `--NAME=N` among the arguments gtest left, or `fallback`.
int BenchFlag(const char* name, int fallback);

// The diagnosis tests' plan: an mlp (batch 64, hidden 128, 3 layers, dense boxing) on
// 2 nodes x 1 device, dp=2.
std::string TwoNodeMlpPlan();

// Waits until `launch`'s stderr holds `needle`: the seconds from `since` to when it was
// seen (polled every 20 ms), or -1 after `timeout`.
double SecondsUntilStderrHas(Process& launch, const std::string& needle, std::chrono::steady_clock::time_point since,
                             std::chrono::milliseconds timeout);

// Waits (60 s at most) until `launch`'s stderr holds `needle`; false when it never did.
bool WaitForStderr(Process& launch, const std::string& needle);

// Waits (60 s at most) until `launch` printed the metrics of `iteration` or a later one;
// false when it never did (or its stdout ended first).
bool WaitForIteration(Process& launch, int iteration);

// A job id unique to this test process: "<name>-<pid>".
std::string JobId(const std::string& name);

// The value after `"key": ` in a metrics or JSON line, up to the next ',' or '}' ("" when
// the key is absent).
std::string JsonValue(const std::string& line, const std::string& key);

// Pid of the worker of `job_id` on node `node` (-1 when there is none).
pid_t WorkerPid(const std::string& job_id, int node);
// Waits until no worker of `job_id` is left; false after `timeout`.
bool NoWorkersLeft(const std::string& job_id, std::chrono::milliseconds timeout);

}  // namespace oneflow::testing

#endif  // TESTS_CLUSTER_CLUSTER_HARNESS_H_
