// Recovery from a lost node (docs/elastic.md), on loopback daemons: an mlp (dp=3 over 3
// nodes x 1 device) through `oneflow launch --checkpoint_every=10`; once the checkpoint
// after iteration 10 is complete (and a few more iterations trained), one node is lost.
//
//   spare:     node 1's daemon SIGKILLed; --spare_nodes gives its rank to a fourth daemon.
//   shrink:    node 1's daemon SIGKILLed, no spare; --elastic=shrink --min_nodes=2
//              compiles the job again for the 2 survivors (dp 3 -> 2) and resumes there.
//   reference: node 1's worker SIGKILLed (its daemon lives); --max_restarts=1 restarts the
//              job on the same 3 daemons: the recovery path that existed before spares.
//
// Measured from the SIGKILL: the first metrics line trained again (kill_to_training_s),
// the launch's own figure in that line ("recovery": {"seconds"}: from the moment it saw
// the failure), and the iterations trained twice (the newest iteration printed before
// the kill + 1 - the resume point). One JSON line per run and kind, then one with the
// ratios of the medians (spare / reference, shrink / spare). Loopback only: no netns hosts here.
//
//   bazel run //bench/elastic:elastic_bench [-- --runs=2]
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/lib/statistics.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Measured {
  double kill_to_training_s = -1;
  double launch_seconds = -1;  // The recovery's "seconds" (spare, shrink) or -1.
  int resumed_at = -1;
  int iterations_lost = -1;
};

// The number after `"key": ` in `line`, or -1.
double NumberAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stod(line.substr(at + key.size() + 4));
}

enum class Kind { kReference, kSpare, kShrink };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kReference:
      return "reference: --max_restarts (worker SIGKILL)";
    case Kind::kSpare:
      return "spare (daemon SIGKILL)";
    case Kind::kShrink:
      return "shrink to 2 nodes (daemon SIGKILL)";
  }
  return "";
}

// Runs one launch on daemons 0..2 (+ 3 as the spare for kSpare), loses node 1 after
// iteration 14, and measures until the first iteration trained again.
Measured RunOnce(Daemons& daemons, const std::string& plan, Kind kind, int run) {
  const bool daemon_lost = kind != Kind::kReference;
  const char* label = kind == Kind::kSpare ? "-spare-" : kind == Kind::kShrink ? "-shrink-" : "-restart-";
  const std::string job = absl::StrCat("elastic-bench-", getpid(), label, run);
  const std::string dir = TempPath(absl::StrCat("checkpoints", label, run));
  std::vector<std::string> extra = {"--checkpoint_dir=" + dir, "--checkpoint_every=10"};
  if (kind == Kind::kSpare) extra.push_back("--spare_nodes=" + daemons.address(3));
  if (kind == Kind::kShrink) extra.insert(extra.end(), {"--elastic=shrink", "--min_nodes=2"});
  if (kind == Kind::kReference) extra.push_back("--max_restarts=1");
  std::unique_ptr<Process> launch = Launch(daemons, plan, 100000000, job, extra, daemons.Nodes(0, 3));
  const auto ready_by = Clock::now() + milliseconds(60000);
  while (Clock::now() < ready_by) {
    const std::vector<std::string> lines = launch->StdoutLines();
    if (!lines.empty() && IterationOf(lines.back()) >= 14 &&
        launch->Stderr().find("iter-00000010 complete") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  Measured measured;
  if (daemon_lost) {
    daemons.Signal(1, SIGKILL);
  } else {
    const pid_t victim = WorkerPid(job, 1);
    if (victim > 0) kill(victim, SIGKILL);
  }
  const auto killed = Clock::now();
  // The new attempt's lines are those after the launch announced it (stderr: the
  // "recovery:" line, or "restart 1 of 1"): the failed attempt prints no metrics once its
  // failure is seen, and a new worker needs far longer to start than the launch to print.
  const std::string announced = daemon_lost ? "oneflow launch: recovery: " : "oneflow launch: restart 1 of 1";
  size_t first_new_line = 0;
  bool seen = false;
  while (Since(killed) < 120 && measured.kill_to_training_s < 0) {
    if (!seen && launch->Stderr().find(announced) != std::string::npos) {
      seen = true;
      first_new_line = launch->StdoutLines().size();
    }
    const std::vector<std::string> lines = launch->StdoutLines();
    if (seen && lines.size() > first_new_line) {
      measured.kill_to_training_s = Since(killed);
      measured.resumed_at = IterationOf(lines[first_new_line]);
      measured.launch_seconds = daemon_lost ? NumberAfter(lines[first_new_line], "seconds") : -1;
      // Trained twice: from the resume point to the newest iteration printed before.
      int newest_before = -1;
      for (size_t i = 0; i < first_new_line; ++i) newest_before = std::max(newest_before, IterationOf(lines[i]));
      measured.iterations_lost = std::max(0, newest_before + 1 - measured.resumed_at);
      break;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  launch->Signal(SIGINT);
  EXPECT_TRUE(launch->Wait(milliseconds(30000)));
  // The launch's own account (recovery lines, reports), for reading the timeline.
  std::ofstream(TempPath(job + ".stderr")) << launch->Stderr();
  std::fprintf(stderr, "launch stderr: %s\n", TempPath(job + ".stderr").c_str());
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
  return measured;
}

TEST(ElasticBench, KillToTrainingAgain) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/elastic-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const std::string plan = CompilePlan(
      "mlp", {"--batch=48", "--hidden=128", "--layers=3", "--compression=off", "--nodes=3", "--devices_per_node=1",
              "--dp=3"},
      "elastic-mlp");
  std::vector<double> spare_seconds, reference_seconds, shrink_seconds;
  for (int run = 0; run < BenchFlag("runs", 2); ++run) {
    for (Kind kind : {Kind::kReference, Kind::kSpare, Kind::kShrink}) {
      Daemons daemons(4);  // Fresh ones: the spare and shrink runs kill daemon 1.
      const Measured m = RunOnce(daemons, plan, kind, run);
      std::printf(
          "{\"bench\": \"elastic\", \"kind\": \"%s\", \"run\": %d, \"transport\": \"loopback\", "
          "\"model\": \"mlp h128 L3 dp=3, 3 nodes x 1 device\", \"checkpoint_every\": 10, "
          "\"kill_to_training_s\": %.3f, \"launch_recovery_seconds\": %.3f, \"resumed_at_iteration\": %d, "
          "\"iterations_lost\": %d}\n",
          KindName(kind), run, m.kill_to_training_s,
          m.launch_seconds, m.resumed_at, m.iterations_lost);
      std::fflush(stdout);
      EXPECT_GE(m.kill_to_training_s, 0);
      (kind == Kind::kSpare    ? spare_seconds
       : kind == Kind::kShrink ? shrink_seconds
                               : reference_seconds)
          .push_back(m.kill_to_training_s);
    }
  }
  std::printf(
      "{\"bench\": \"elastic\", \"summary\": true, \"median_spare_kill_to_training_s\": %.3f, "
      "\"median_reference_kill_to_training_s\": %.3f, \"ratio_spare_over_reference\": %.3f, "
      "\"median_shrink_kill_to_training_s\": %.3f, \"ratio_shrink_over_spare\": %.3f}\n",
      Median(spare_seconds), Median(reference_seconds), Median(spare_seconds) / Median(reference_seconds),
      Median(shrink_seconds), Median(shrink_seconds) / Median(spare_seconds));
}

}  // namespace
}  // namespace oneflow::testing
