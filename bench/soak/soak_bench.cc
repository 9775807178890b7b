// Soak: train for a fixed wall time and watch every process's memory and the disk the
// run uses, the way a new user's weeks-long job would run (issue 31, docs/runtime.md
// "Long runs"). Two runs of the same mlp (2 devices, dp=2), checkpointing with the default
// retention:
//   run     `oneflow run PLAN --checkpoint_dir=D --checkpoint_every=E`  (one process)
//   launch  `oneflow launch` on two local oneflowd daemons, 1 device each (the launch
//           client, both daemons and both workers)
//
//   bazel run -c opt //bench/soak:soak_bench -- [--seconds=60] [--every=10000]
//       [--checkpoint_every=2000] [--hidden=64] [--batch=16] [--mode=both|run|launch]
//
// Each run gets --seconds of training (after a 2 s start-up allowance). A JSON line each
// time the run passes another --every iterations:
//   {"bench": "soak", "mode": "run", "iteration": 10000, "seconds": 3.2,
//    "resident_bytes": {"oneflow_run": 61234176}, "disk_bytes": {"checkpoints": 352256}}
// (launch: "client", "daemon0", "daemon1", "worker0", "worker1"; disk: "checkpoints",
// "daemon0_work_dir", "daemon1_work_dir"), and at the end one summary line per run:
//   {"bench": "soak", "mode": "run", "summary": true, "iterations": ..., "seconds": ...,
//    "growth_bytes_per_iteration": {"oneflow_run": 0.8}, "disk_growth_bytes_per_iteration":
//    {"checkpoints": 0}, "reference_bytes_per_iteration": 176, "ratio": {"oneflow_run": 0.005}}
// The growth is the least-squares slope of resident bytes over iterations across the
// samples after the first (start-up allocations excluded); the reference is what keeping
// one iteration's metrics costs (sizeof(actors::IterationMetrics), which every iteration
// added before the runtime stopped keeping them), and the ratio is growth / reference.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actors/metrics.h"
#include "gtest/gtest.h"
#include "oneflow_core/process_memory.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Bytes the files under `path` occupy on disk (allocated blocks, as du counts).
int64_t DiskBytes(const std::string& path) {
  int64_t bytes = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(path, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    struct stat info {};
    if (lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) bytes += int64_t{info.st_blocks} * 512;
  }
  return bytes;
}

// Follows a growing metrics file and returns the newest iteration it holds (-1: none).
class MetricsTail {
 public:
  explicit MetricsTail(std::string path) : path_(std::move(path)) {}
  int64_t Newest() {
    std::ifstream file(path_);
    if (!file) return newest_;
    file.seekg(offset_);
    std::string line;
    while (std::getline(file, line)) {
      if (file.eof()) break;  // A line still being written: read it next time.
      offset_ += static_cast<std::streamoff>(line.size() + 1);
      const int iteration = IterationOf(line);
      if (iteration >= 0) newest_ = iteration;
    }
    return newest_;
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
  int64_t newest_ = -1;
};

struct Sample {
  int64_t iteration = 0;
  std::map<std::string, int64_t> resident;  // by process
  std::map<std::string, int64_t> disk;      // by what
};

std::string JsonObject(const std::map<std::string, int64_t>& values) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : values) parts.push_back(absl::StrCat("\"", name, "\": ", value));
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

std::string JsonObject(const std::map<std::string, double>& values) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : values) parts.push_back(absl::StrFormat("\"%s\": %.3f", name, value));
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

// Least-squares slope of y over x.
double Slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double denominator = n * sxx - sx * sx;
  return denominator == 0 ? 0 : (n * sxy - sx * sy) / denominator;
}

// Per-iteration growth of each series over the samples after the first.
std::map<std::string, double> Growth(const std::vector<Sample>& samples, bool disk) {
  std::map<std::string, double> growth;
  if (samples.size() < 3) return growth;
  for (const auto& [name, unused] : disk ? samples.back().disk : samples.back().resident) {
    std::vector<double> x, y;
    for (size_t i = 1; i < samples.size(); ++i) {
      const auto& series = disk ? samples[i].disk : samples[i].resident;
      const auto found = series.find(name);
      if (found == series.end()) continue;
      x.push_back(static_cast<double>(samples[i].iteration));
      y.push_back(static_cast<double>(found->second));
    }
    if (x.size() >= 2) growth[name] = Slope(x, y);
  }
  return growth;
}

// Samples `processes` and `disks` every `every` iterations of `metrics` until `seconds`
// of training passed or a process ended; prints the lines.
void Soak(const std::string& mode, MetricsTail& metrics, const std::map<std::string, std::function<pid_t()>>& processes,
          const std::map<std::string, std::string>& disks, double seconds, int64_t every,
          const std::function<bool()>& alive) {
  std::vector<Sample> samples;
  const Clock::time_point start = Clock::now();
  int64_t next = every;
  int64_t newest = -1;
  while (Since(start) < seconds + 2 && alive()) {
    std::this_thread::sleep_for(milliseconds(100));
    newest = metrics.Newest();
    if (newest + 1 < next) continue;
    Sample sample;
    sample.iteration = newest + 1;
    for (const auto& [name, pid] : processes) {
      absl::StatusOr<ProcessMemory> memory = ReadProcessMemory(pid());
      if (memory.ok()) sample.resident[name] = memory->resident_bytes;
    }
    for (const auto& [name, path] : disks) sample.disk[name] = DiskBytes(path);
    std::printf("{\"bench\": \"soak\", \"mode\": \"%s\", \"iteration\": %lld, \"seconds\": %.1f, "
                "\"resident_bytes\": %s, \"disk_bytes\": %s}\n",
                mode.c_str(), static_cast<long long>(sample.iteration), Since(start),
                JsonObject(sample.resident).c_str(), JsonObject(sample.disk).c_str());
    std::fflush(stdout);
    samples.push_back(std::move(sample));
    while (next <= newest + 1) next += every;
  }
  const double reference = static_cast<double>(sizeof(actors::IterationMetrics));
  const std::map<std::string, double> growth = Growth(samples, false);
  std::map<std::string, double> ratio;
  for (const auto& [name, bytes] : growth) ratio[name] = bytes / reference;
  std::printf("{\"bench\": \"soak\", \"mode\": \"%s\", \"summary\": true, \"iterations\": %lld, \"seconds\": %.1f, "
              "\"samples\": %zu, \"growth_bytes_per_iteration\": %s, \"disk_growth_bytes_per_iteration\": %s, "
              "\"reference_bytes_per_iteration\": %.0f, \"ratio\": %s}\n",
              mode.c_str(), static_cast<long long>(newest + 1), Since(start), samples.size(),
              JsonObject(growth).c_str(), JsonObject(Growth(samples, true)).c_str(), reference,
              JsonObject(ratio).c_str());
  std::fflush(stdout);
}

std::string BenchText(const char* name, const std::string& fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (size_t i = 1; i < ::testing::internal::GetArgvs().size(); ++i) {
    const std::string argument = ::testing::internal::GetArgvs()[i];
    if (argument.rfind(prefix, 0) == 0) return argument.substr(prefix.size());
  }
  return fallback;
}

TEST(SoakBench, MemoryAndDiskPerIteration) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/soak-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const double seconds = BenchFlag("seconds", 60);
  const int64_t every = BenchFlag("every", 10000);
  const int checkpoint_every = BenchFlag("checkpoint_every", 2000);
  const std::string mode = BenchText("mode", "both");
  const std::vector<std::string> model = {absl::StrCat("--hidden=", BenchFlag("hidden", 64)),
                                          absl::StrCat("--batch=", BenchFlag("batch", 16)), "--layers=2",
                                          "--compression=off"};
  constexpr int kForever = 1000000000;  // Stopped by the wall time, not the count.

  if (mode == "both" || mode == "run") {
    std::vector<std::string> flags = model;
    flags.insert(flags.end(), {"--devices_per_node=2", "--dp=2"});
    const std::string plan = CompilePlan("mlp", flags, "soak-run");
    ASSERT_FALSE(HasFailure()) << "run it with bazel run (the examples are runfiles)";
    const std::string metrics = TempPath("soak-run.jsonl");
    const std::string checkpoints = TempPath("soak-run-checkpoints");
    Process run({Runfile("tools/cli/oneflow"), "run", plan, absl::StrCat("--iters=", kForever), "--metrics=" + metrics,
                 "--checkpoint_dir=" + checkpoints, absl::StrCat("--checkpoint_every=", checkpoint_every)});
    MetricsTail tail(metrics);
    Soak("run", tail, {{"oneflow_run", [&] { return run.pid(); }}}, {{"checkpoints", checkpoints}}, seconds, every,
         [&] { return ReadProcessMemory(run.pid()).ok(); });
    run.Signal(SIGKILL);
    run.Wait(milliseconds(10000));
  }

  if (mode == "both" || mode == "launch") {
    std::vector<std::string> flags = model;
    flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=1", "--dp=2"});
    const std::string plan = CompilePlan("mlp", flags, "soak-launch");
    ASSERT_FALSE(HasFailure());
    const std::string metrics = TempPath("soak-launch.jsonl");
    const std::string checkpoints = TempPath("soak-launch-checkpoints");
    Daemons daemons(2);
    ASSERT_EQ(daemons.size(), 2);
    const std::string job = absl::StrCat("soak-", getpid());
    std::unique_ptr<Process> launch =
        Launch(daemons, plan, kForever, job,
               {"--metrics=" + metrics, "--checkpoint_dir=" + checkpoints,
                absl::StrCat("--checkpoint_every=", checkpoint_every)});
    MetricsTail tail(metrics);
    Soak("launch", tail,
         {{"client", [&] { return launch->pid(); }},
          {"daemon0", [&] { return daemons.pid(0); }},
          {"daemon1", [&] { return daemons.pid(1); }},
          {"worker0", [&] { return WorkerPid(job, 0); }},
          {"worker1", [&] { return WorkerPid(job, 1); }}},
         {{"checkpoints", checkpoints}, {"daemon0_work_dir", daemons.work_dir(0)},
          {"daemon1_work_dir", daemons.work_dir(1)}},
         seconds, every,
         [&] { return ReadProcessMemory(launch->pid()).ok(); });
    launch->Signal(SIGINT);  // Cancels the job on both daemons.
    launch->Wait(milliseconds(20000));
    NoWorkersLeft(job, milliseconds(10000));
  }
}

}  // namespace
}  // namespace oneflow::testing
