// In-memory checkpoints on a peer (docs/elastic.md, `oneflow launch
// --memory_checkpoint_every=K`), on loopback daemons: an mlp (hidden 256, 4 layers, dp=3
// with ZeRO-1 over 3 nodes x 1 device, so every node saves a part).
//
//   step cost:  median and mean step time of iterations 20..N-1 with in-memory
//               checkpoints every 10 iterations against the same launch without
//               (alternating rounds; the mean includes the steps that save);
//   recovery:   node 1's daemon SIGKILLed after iteration 24, a spare takes its rank; the
//               seconds from the SIGKILL to the first iteration trained again when the
//               job resumes from memory (disk checkpoints every 1000: none) against a
//               resume from a disk checkpoint every 10 iterations.
//
// One JSON line per run, then one with the medians and ratios.
//
//   bazel run //bench/elastic:memory_checkpoint_bench [-- --runs=2 --iters=120]
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  if (values.empty()) return -1;
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

double NumberAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stod(line.substr(at + key.size() + 4));
}

// The median and the mean step time of iterations >= 20 of one launch that runs to its
// end: the median is a normal step's, the mean includes the steps that save.
struct StepTimes {
  double median_ms = -1;
  double mean_ms = -1;
};
StepTimes MeasureSteps(Daemons& daemons, const std::string& plan, int iterations, bool memory, int run) {
  const std::string job = absl::StrCat("memory-cost-", getpid(), memory ? "-memory-" : "-none-", run);
  const std::string dir = TempPath(absl::StrCat("cost-", job));
  std::vector<std::string> extra = {"--checkpoint_dir=" + dir, "--checkpoint_every=1000", "--max_restarts=1"};
  if (memory) extra.push_back("--memory_checkpoint_every=10");
  std::unique_ptr<Process> launch = Launch(daemons, plan, iterations, job, extra, daemons.Nodes(0, 3));
  EXPECT_TRUE(launch->Wait(milliseconds(300000)));
  EXPECT_EQ(launch->exit_code(), 0) << launch->Stderr();
  std::vector<double> steps;
  double sum = 0;
  for (const std::string& line : launch->StdoutLines()) {
    if (IterationOf(line) < 20) continue;
    steps.push_back(NumberAfter(line, "step_ms"));
    sum += steps.back();
  }
  return StepTimes{Median(steps), steps.empty() ? -1 : sum / static_cast<double>(steps.size())};
}

// Seconds from node 1's daemon SIGKILL (after iteration 24) to the first iteration
// trained again, resuming from memory or from disk; the iteration it resumed at.
double KillToTraining(const std::string& plan, bool memory, int run, int* resumed_at) {
  Daemons daemons(4);
  const std::string job = absl::StrCat("memory-recovery-", getpid(), memory ? "-memory-" : "-disk-", run);
  const std::string dir = TempPath(absl::StrCat("recovery-", job));
  std::vector<std::string> extra = {"--spare_nodes=" + daemons.address(3), "--checkpoint_dir=" + dir};
  if (memory) {
    extra.insert(extra.end(), {"--checkpoint_every=1000", "--memory_checkpoint_every=10"});
  } else {
    extra.push_back("--checkpoint_every=10");
  }
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job, extra, daemons.Nodes(0, 3));
  const auto ready_by = Clock::now() + milliseconds(60000);
  while (Clock::now() < ready_by) {
    const std::vector<std::string> lines = launch->StdoutLines();
    if (!lines.empty() && IterationOf(lines.back()) >= 24) break;
    std::this_thread::sleep_for(milliseconds(5));
  }
  daemons.Signal(1, SIGKILL);
  const auto killed = Clock::now();
  double seconds = -1;
  size_t first_new_line = 0;
  bool seen = false;
  while (Since(killed) < 120 && seconds < 0) {
    if (!seen && launch->Stderr().find("oneflow launch: recovery: ") != std::string::npos) {
      seen = true;
      first_new_line = launch->StdoutLines().size();
    }
    const std::vector<std::string> lines = launch->StdoutLines();
    if (seen && lines.size() > first_new_line) {
      seconds = Since(killed);
      *resumed_at = IterationOf(lines[first_new_line]);
      EXPECT_NE(lines[first_new_line].find(memory ? "\"from\": \"memory\"" : "\"from\": \"disk\""), std::string::npos)
          << lines[first_new_line];
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  launch->Signal(SIGINT);
  EXPECT_TRUE(launch->Wait(milliseconds(30000)));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
  return seconds;
}

TEST(MemoryCheckpointBench, StepCostAndRecoveryTime) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/memory-checkpoint-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const std::string plan = CompilePlan(
      "mlp", {"--batch=48", "--hidden=256", "--layers=4", "--compression=off", "--nodes=3", "--devices_per_node=1",
              "--dp=3", "--zero=1"},
      "memory-bench-mlp");
  const int runs = BenchFlag("runs", 2);
  const int iterations = BenchFlag("iters", 120);
  std::vector<double> none_ms, memory_ms, none_mean, memory_mean;
  {
    Daemons daemons(3);
    for (int run = 0; run < runs; ++run) {
      for (bool memory : {false, true}) {
        const StepTimes times = MeasureSteps(daemons, plan, iterations, memory, run);
        std::printf("{\"bench\": \"memory_checkpoint_cost\", \"run\": %d, \"memory_checkpoint_every\": %d, "
                    "\"iterations\": %d, \"median_step_ms\": %.3f, \"mean_step_ms\": %.3f}\n",
                    run, memory ? 10 : 0, iterations, times.median_ms, times.mean_ms);
        std::fflush(stdout);
        (memory ? memory_ms : none_ms).push_back(times.median_ms);
        (memory ? memory_mean : none_mean).push_back(times.mean_ms);
      }
    }
  }
  std::vector<double> memory_s, disk_s;
  for (int run = 0; run < runs; ++run) {
    for (bool memory : {false, true}) {
      int resumed_at = -1;
      const double seconds = KillToTraining(plan, memory, run, &resumed_at);
      std::printf("{\"bench\": \"memory_checkpoint_recovery\", \"run\": %d, \"from\": \"%s\", "
                  "\"kill_to_training_s\": %.3f, \"resumed_at_iteration\": %d}\n",
                  run, memory ? "memory" : "disk", seconds, resumed_at);
      std::fflush(stdout);
      EXPECT_GE(seconds, 0);
      (memory ? memory_s : disk_s).push_back(seconds);
    }
  }
  std::printf(
      "{\"bench\": \"memory_checkpoint\", \"summary\": true, \"model\": \"mlp h256 L4 dp=3 zero=1, 3 loopback "
      "nodes x 1 device\", \"median_step_ms_none\": %.3f, \"median_step_ms_memory_every_10\": %.3f, "
      "\"step_ratio_memory_over_none\": %.3f, \"mean_step_ratio_memory_over_none\": %.3f, "
      "\"median_kill_to_training_s_memory\": %.3f, "
      "\"median_kill_to_training_s_disk\": %.3f, \"recovery_ratio_memory_over_disk\": %.3f}\n",
      Median(none_ms), Median(memory_ms), Median(memory_ms) / Median(none_ms), Median(memory_mean) / Median(none_mean),
      Median(memory_s), Median(disk_s),
      Median(memory_s) / Median(disk_s));
}

}  // namespace
}  // namespace oneflow::testing
