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

TEST(SharedHostProcessesTest, OneProcessIsRefused) {
  EXPECT_EQ(MeasureSharedHostInProcesses(1, 2).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow::cli
