// Overhead of the flight recorder and the heartbeats on training step time: an mlp with
// dp=2 over 2 nodes x 1 device launched through two local daemons, alternately with
// diagnosis off (the workers' ONEFLOW_FLIGHT_RECORDER=off; `oneflow launch
// --hang_seconds=0 --slow_factor=0`, so the daemons send no heartbeats) and on (the
// defaults), --rounds times each. Per run: the median step_ms of its iterations after
// the first 50; per side: the median of its runs; and the median over rounds of each
// round's on against its off.
//
//   bazel run -c opt //bench/diagnosis:diagnosis_overhead_bench [-- --rounds=4 --iters=1500]
//
// One JSON line: {"bench":"diagnosis_overhead","model":...,"off_step_ms":...,
// "on_step_ms":...,"overhead_pct":...,"off_runs":[...],"on_runs":[...]}.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

int Flag(const char* name, int fallback) {
  for (size_t i = 1; i < ::testing::internal::GetArgvs().size(); ++i) {
    const std::string argument = ::testing::internal::GetArgvs()[i];
    const std::string prefix = absl::StrCat("--", name, "=");
    if (argument.rfind(prefix, 0) == 0) return std::atoi(argument.c_str() + prefix.size());
  }
  return fallback;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double StepMs(const std::vector<std::string>& lines, int skip) {
  std::vector<double> steps;
  for (const std::string& line : lines) {
    const int iteration = IterationOf(line);
    const size_t at = line.find("\"step_ms\": ");
    if (iteration >= skip && at != std::string::npos) steps.push_back(std::stod(line.substr(at + 11)));
  }
  return Median(steps);
}

TEST(DiagnosisBench, OverheadOfFlightRecorderAndHeartbeats) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/diagnosis-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const int rounds = Flag("rounds", 4), iterations = Flag("iters", 1500);
  const std::string model = "mlp --batch=64 --hidden=256 --layers=4, 2 nodes x 1 device, dp=2";
  const std::string plan = CompilePlan("mlp",
                                       {"--batch=64", "--hidden=256", "--layers=4", "--compression=off", "--nodes=2",
                                        "--devices_per_node=1", "--dp=2"},
                                       "bench-mlp");
  setenv("ONEFLOW_FLIGHT_RECORDER", "off", 1);
  Daemons off(2);
  unsetenv("ONEFLOW_FLIGHT_RECORDER");
  Daemons on(2);
  std::vector<double> off_runs, on_runs;
  for (int round = 0; round < rounds; ++round) {
    for (const bool diagnosis : {false, true}) {
      std::vector<std::string> extra;
      if (!diagnosis) extra = {"--hang_seconds=0", "--slow_factor=0"};
      std::unique_ptr<Process> launch = Launch(diagnosis ? on : off, plan, iterations,
                                               absl::StrCat("bench-", getpid(), "-", round, diagnosis ? "-on" : "-off"),
                                               extra);
      ASSERT_TRUE(launch->Wait(milliseconds(600000)));
      ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
      (diagnosis ? on_runs : off_runs).push_back(StepMs(launch->StdoutLines(), 50));
    }
  }
  const double off_ms = Median(off_runs), on_ms = Median(on_runs);
  // Each round's on against its own off (the machine's load drifts between rounds).
  std::vector<double> paired;
  for (size_t i = 0; i < on_runs.size(); ++i) paired.push_back(100 * (on_runs[i] - off_runs[i]) / off_runs[i]);
  std::printf(
      "{\"bench\": \"diagnosis_overhead\", \"model\": \"%s\", \"iterations\": %d, \"rounds\": %d, \"off_step_ms\": "
      "%.4f, \"on_step_ms\": %.4f, \"overhead_pct\": %.2f, \"paired_overhead_pct_median\": %.2f, \"off_runs\": [%s], \"on_runs\": [%s]}\n",
      model.c_str(), iterations, rounds, off_ms, on_ms, 100 * (on_ms - off_ms) / off_ms,
      Median(paired), absl::StrJoin(off_runs, ", ").c_str(), absl::StrJoin(on_runs, ", ").c_str());
}

}  // namespace
}  // namespace oneflow::testing
