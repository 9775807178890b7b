// Memory that stays flat however long a run lasts (docs/runtime.md, "Long runs"): the
// same plan trained for N and for 10 N iterations must end with resident memory that
// differs by less than a fixed bound, independent of N, in every process: `oneflow run`,
// and for a launched job the worker, the daemon and the launch client (one node with two
// devices: the whole launcher path, without cross-process collectives, which would make
// 10 N iterations take minutes on a loaded machine). Memory is read
// the way `oneflow status` reports it (oneflow_core/process_memory.h): a process's peak
// resident set from its exit accounting, a live daemon's resident set from /proc.
//
// With state kept per iteration (the ~180 B of one iteration's metrics, before the fix)
// 9 N extra iterations add far more than the bound: with that state forced back on,
// `oneflow run` grew by 4.97 MB and the worker by 5.06 MB and both checks failed.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "oneflow_core/process_memory.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

// Iterations of the short run; the long one runs kLongFactor times as many. 9 N
// iterations at ~180 B each would be ~5 MB, five times the bound.
constexpr int kShort = 3000;
constexpr int kLongFactor = 10;
// What the same program's peak memory may differ by between two runs for reasons other
// than the iteration count (allocator arenas, thread stacks touched a little further).
constexpr int64_t kBoundBytes = int64_t{1} << 20;
// The daemon's resident memory (not a peak) may keep a transient high-water mark: its
// per-job event queue holds up to 10,000 events (~1.5 MB) while a loaded client lags, and
// gRPC may buffer up to the client's flow-control window. The daemon trims freed pages
// when a job's stream ends, but pages that a few live allocations pin stay resident. On
// the loaded machine one run saw 19.55 MB after the short job and 23.15 MB after the long
// one (once; it passed on a rerun), while by-hand runs of seven jobs of 3,000 or 30,000
// iterations grew by 30-200 KB per job whatever the count. Hence the check further down.
constexpr int64_t kDaemonBoundBytes = int64_t{2} << 20;

// A small mlp: iterations take tens of microseconds, so 10 N of them take seconds.
std::vector<std::string> SmallMlp() { return {"--batch=8", "--hidden=16", "--layers=2", "--compression=off"}; }

// Peak resident bytes of `oneflow run PLAN --iters=N`.
int64_t RunPeak(const std::string& plan, int iterations) {
  Process run({Runfile("tools/cli/oneflow"), "run", plan, absl::StrCat("--iters=", iterations), "--metrics=/dev/null"});
  EXPECT_TRUE(run.Wait(milliseconds(240000)));
  EXPECT_EQ(run.exit_code(), 0) << run.Stderr();
  return run.peak_resident_bytes();
}

TEST(LongRunMemoryTest, OneflowRunStaysFlat) {
  const std::string plan = CompilePlan("mlp", [] {
    std::vector<std::string> flags = SmallMlp();
    flags.insert(flags.end(), {"--devices_per_node=2", "--dp=2"});
    return flags;
  }(), "run-memory");
  const int64_t short_peak = RunPeak(plan, kShort);
  const int64_t long_peak = RunPeak(plan, kShort * kLongFactor);
  ASSERT_GT(short_peak, 0);
  RecordProperty("short_peak_bytes", std::to_string(short_peak));
  RecordProperty("long_peak_bytes", std::to_string(long_peak));
  EXPECT_LT(long_peak - short_peak, kBoundBytes)
      << "oneflow run: peak resident " << short_peak << " B after " << kShort << " iterations, " << long_peak
      << " B after " << kShort * kLongFactor;
}

// Every node's worker_peak_resident_bytes in `oneflow status JOB --format=json`.
std::vector<int64_t> WorkerPeaks(const Daemons& daemons, const std::string& job) {
  Process status({Runfile("tools/cli/oneflow"), "status", job, daemons.Nodes(),
                  "--token_file=" + daemons.token_file(), "--format=json"});
  EXPECT_TRUE(status.Wait(milliseconds(30000)));
  EXPECT_EQ(status.exit_code(), 0) << status.Stderr();
  std::string text;
  for (const std::string& line : status.StdoutLines()) text += line;
  std::vector<int64_t> peaks;
  static const std::regex field("\"worker_peak_resident_bytes\": *([0-9]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), field); it != std::sregex_iterator(); ++it) {
    int64_t peak = 0;
    EXPECT_TRUE(absl::SimpleAtoi((*it)[1].str(), &peak));
    peaks.push_back(peak);
  }
  return peaks;
}

struct LaunchedMemory {
  int64_t client_peak = 0;
  std::vector<int64_t> worker_peaks;    // by node
  std::vector<int64_t> daemon_resident;  // by node, after the job
};

LaunchedMemory LaunchAndMeasure(const Daemons& daemons, const std::string& plan, int iterations,
                                const std::string& job) {
  LaunchedMemory memory;
  std::unique_ptr<Process> launch = Launch(daemons, plan, iterations, job, {"--metrics=/dev/null"});
  EXPECT_TRUE(launch->Wait(milliseconds(240000)));
  EXPECT_EQ(launch->exit_code(), 0) << launch->Stderr();
  memory.client_peak = launch->peak_resident_bytes();
  memory.worker_peaks = WorkerPeaks(daemons, job);
  for (int i = 0; i < daemons.size(); ++i) {
    absl::StatusOr<ProcessMemory> daemon = ReadProcessMemory(daemons.pid(i));
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    memory.daemon_resident.push_back(daemon.ok() ? daemon->resident_bytes : 0);
  }
  return memory;
}

TEST(LongRunMemoryTest, LaunchedJobStaysFlatInEveryProcess) {
  std::vector<std::string> flags = SmallMlp();
  flags.insert(flags.end(), {"--nodes=1", "--devices_per_node=2", "--dp=2"});
  const std::string plan = CompilePlan("mlp", flags, "launch-memory");
  Daemons daemons(1);
  ASSERT_EQ(daemons.size(), 1);
  const std::string id = absl::StrCat("memory-", getpid());
  // A first job as long as the long one warms the daemon up (gRPC's buffers, and the
  // high-water mark of its event queue, which a lagging client can fill to its bound):
  // what the later jobs add is then what they keep.
  LaunchAndMeasure(daemons, plan, kShort * kLongFactor, id + "-warm");
  const LaunchedMemory short_run = LaunchAndMeasure(daemons, plan, kShort, id + "-short");
  const LaunchedMemory long_run = LaunchAndMeasure(daemons, plan, kShort * kLongFactor, id + "-long");
  // A second long job: the daemon check below needs two steps (see there).
  const LaunchedMemory long_again = LaunchAndMeasure(daemons, plan, kShort * kLongFactor, id + "-long-again");
  const std::string iterations = absl::StrCat(" after ", kShort, " and ", kShort * kLongFactor, " iterations: ");

  ASSERT_GT(short_run.client_peak, 0);
  // The client's bound is the daemon's 2 MiB: its peak (VmHWM) moved by 1.2 MB between the
  // short and long job in one run of the whole suite on 2 cores (events queued while the
  // machine was busy); the leak this guards against adds 176 B per iteration, 4.7 MB here.
  EXPECT_LT(long_run.client_peak - short_run.client_peak, 2 * kBoundBytes)
      << "launch client peak" << iterations << short_run.client_peak << " B, " << long_run.client_peak << " B";
  ASSERT_EQ(short_run.worker_peaks.size(), 1u);
  ASSERT_EQ(long_run.worker_peaks.size(), 1u);
  RecordProperty("client_peak_bytes", absl::StrCat(short_run.client_peak, " ", long_run.client_peak));
  RecordProperty("worker_peak_bytes", absl::StrCat(short_run.worker_peaks.at(0), " ", long_run.worker_peaks.at(0)));
  ASSERT_EQ(long_again.daemon_resident.size(), 1u);
  RecordProperty("daemon_bytes", absl::StrCat(short_run.daemon_resident.at(0), " ", long_run.daemon_resident.at(0),
                                              " ", long_again.daemon_resident.at(0)));
  for (int node = 0; node < 1; ++node) {
    EXPECT_GT(short_run.worker_peaks[node], 0);
    EXPECT_LT(long_run.worker_peaks[node] - short_run.worker_peaks[node], kBoundBytes)
        << "node " << node << " worker peak" << iterations << short_run.worker_peaks[node] << " B, "
        << long_run.worker_peaks[node] << " B";
    // The daemon lives on: a backlog's high-water mark, once reached, stays in its resident
    // set, so one step (short job -> long job, or long job -> long job) may jump by it once.
    // State kept per iteration grows in both steps: 100 B per iteration adds 2.7 MB in the
    // first and 3 MB in the second, each above the bound. So the smaller step is checked.
    const int64_t first_step = long_run.daemon_resident[node] - short_run.daemon_resident[node];
    const int64_t second_step = long_again.daemon_resident[node] - long_run.daemon_resident[node];
    EXPECT_LT(std::min(first_step, second_step), kDaemonBoundBytes)
        << "node " << node << " daemon resident after " << kShort << ", " << kShort * kLongFactor << " and again "
        << kShort * kLongFactor << " iterations: " << short_run.daemon_resident[node] << " B, "
        << long_run.daemon_resident[node] << " B, " << long_again.daemon_resident[node] << " B";
  }
}

}  // namespace
}  // namespace oneflow::testing
