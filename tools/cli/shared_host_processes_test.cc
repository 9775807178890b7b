#include "tools/cli/shared_host_processes.h"

#include <string>

#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

// The probe's plans for 2 processes: one per run (dp with 1, 2, 4, 8 micro-batches; 2 is
// even, so tp = 2 with 1, 2, 4 too), each holding one device per node.
TEST(SharedHostProcessesTest, EachRunsPlanHasOneDevicePerProcess) {
  const std::vector<SharedHostProbeRun> runs = SharedHostProbeRuns(2);
  ASSERT_EQ(runs.size(), 7u);
  for (const SharedHostProbeRun& run : runs) {
    absl::StatusOr<proto::Plan> plan = CompileSharedHostProbe(/*nodes=*/2, /*devices_per_node=*/1, run);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->devices_size(), 2);
    EXPECT_EQ(plan->devices(0).device().node(), 0);
    EXPECT_EQ(plan->devices(1).device().node(), 1);
  }
}

// Two processes of one device each train the probe: every run reports the CPU time of
// both (positive, and no more than the cores allow over its wall time, as each process
// runs its own compute thread and the samples are real), the acts of both devices, and
// the share fitted lies within the cores; the method says the processes measured it.
TEST(SharedHostProcessesTest, TwoProcessesMeasureTheShareTheyObtain) {
  absl::StatusOr<SharedHostProbe> probe = MeasureSharedHostInProcesses(/*processes=*/2, /*cores=*/2);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->samples.size(), 7u);
  int64_t previous_acts = 0;
  for (size_t i = 0; i < 4; ++i) {  // dp with 1, 2, 4, 8 micro-batches: more acts each time
    EXPECT_GT(probe->samples[i].cpu_seconds, 0);
    EXPECT_GT(probe->samples[i].wall_seconds, 0);
    EXPECT_GT(probe->samples[i].acts, previous_acts);
    previous_acts = probe->samples[i].acts;
  }
  EXPECT_GT(probe->terms.host_core_share, 0);
  EXPECT_LE(probe->terms.host_core_share, 2);
  EXPECT_NE(probe->method.find("as 2 processes of one device each"), std::string::npos) << probe->method;
}

// For an act on its own core only the data-parallel runs are trained: 4 samples, every
// one of reference 0, with more acts each time.
TEST(SharedHostProcessesTest, TheDataParallelRunsAlone) {
  absl::StatusOr<SharedHostProbe> probe =
      MeasureSharedHostInProcesses(/*processes=*/2, /*cores=*/2, /*data_parallel_only=*/true);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->samples.size(), 4u);
  int64_t previous_acts = 0;
  for (const auto_parallel::RunSample& sample : probe->samples) {
    EXPECT_EQ(sample.reference, 0);
    EXPECT_GT(sample.acts, previous_acts);
    previous_acts = sample.acts;
  }
}

// With 3 rounds of each run, interleaved: each run's fastest round (least wall time) is
// that run's (its acts), and no slower than its round of the least CPU time.
TEST(SharedHostProcessesTest, EachRunKeepsItsFastestRound) {
  absl::StatusOr<SharedHostProbe> probe = MeasureSharedHostInProcesses(/*processes=*/2, /*cores=*/2,
                                                                       /*data_parallel_only=*/true, /*rounds_per_run=*/3);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->samples.size(), 4u);
  ASSERT_EQ(probe->least_wall_samples.size(), 4u);
  for (size_t run = 0; run < 4; ++run) {
    SCOPED_TRACE(run);
    EXPECT_EQ(probe->least_wall_samples[run].acts, probe->samples[run].acts);
    EXPECT_GT(probe->least_wall_samples[run].wall_seconds, 0);
    EXPECT_LE(probe->least_wall_samples[run].wall_seconds, probe->samples[run].wall_seconds);
  }
}

TEST(SharedHostProcessesTest, OneProcessIsRefused) {
  EXPECT_EQ(MeasureSharedHostInProcesses(1, 2).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SharedHostProcessesTest, NoRoundIsRefused) {
  EXPECT_EQ(MeasureSharedHostInProcesses(2, 2, true, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow::cli
