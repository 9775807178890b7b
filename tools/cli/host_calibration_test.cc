// The act-count probe behind `oneflow calibrate`'s host lines (host_calibration.h): the same
// gpt cut into 1, 2, 4 and 8 micro-batches, so the acts per step grow by the per-micro-batch
// actors (and, from 2 on, the gradient accumulation's) while the kernels stay; the fit's
// act cost and core share come from those runs; on an even device count tp = 2 runs beside
// them give a boxing act its own cost.
#include <sched.h>

#include "gtest/gtest.h"
#include "tools/cli/host_calibration.h"

namespace oneflow::cli {
namespace {

TEST(HostCalibrationTest, TheActCountProbeRunsTheSameKernelsInMoreActs) {
  const absl::StatusOr<SharedHostProbe> probe = MeasureSharedHost(2, 2);
  ASSERT_TRUE(probe.ok()) << probe.status();
  // dp = 2 with 1, 2, 4, 8 micro-batches, then tp = 2 with 1, 2, 4.
  ASSERT_EQ(probe->samples.size(), 7u);
  // acts(M) = per-iteration actors + M x per-micro-batch actors for M = 2, 4, 8; one
  // micro-batch has no gradient accumulation, so M = 2 adds more than one micro-batch's.
  ASSERT_EQ((probe->samples[2].acts - probe->samples[1].acts) % 2, 0);
  const int64_t per_micro_batch = (probe->samples[2].acts - probe->samples[1].acts) / 2;
  ASSERT_GT(per_micro_batch, 0);
  EXPECT_EQ(probe->samples[3].acts - probe->samples[2].acts, 4 * per_micro_batch);
  EXPECT_GT(probe->samples[1].acts - probe->samples[0].acts, per_micro_batch);
  for (const auto_parallel::RunSample& sample : probe->samples) {
    EXPECT_GT(sample.cpu_seconds, 0);
    EXPECT_GT(sample.wall_seconds, 0);
  }
  // Every pair of runs of one layout is one slope (6 dp, 3 tp); the share is within the 2
  // cores given.
  EXPECT_EQ(probe->terms.slopes, 9);
  EXPECT_GE(probe->terms.act_seconds, 0);
  EXPECT_GT(probe->terms.host_core_share, 0);
  EXPECT_LE(probe->terms.host_core_share, 2);
  EXPECT_NE(probe->method.find("dp=2, 1/2/4/8 micro-batches"), std::string::npos) << probe->method;
  // The tp runs' extra acts are boxing acts in a larger proportion than the dp runs' (the
  // two-kind fit needs >= 0.05 between them), so a boxing act gets its own cost.
  auto boxing_fraction_of_extra = [&](size_t low, size_t high) {
    return static_cast<double>(probe->samples[high].boxing_acts - probe->samples[low].boxing_acts) /
           static_cast<double>(probe->samples[high].acts - probe->samples[low].acts);
  };
  EXPECT_GE(boxing_fraction_of_extra(4, 6) - boxing_fraction_of_extra(0, 3), 0.05);
  for (size_t i = 4; i < 7; ++i) EXPECT_EQ(probe->samples[i].reference, 1);
  ASSERT_TRUE(probe->terms.boxing_act_seconds.has_value());
  EXPECT_GE(*probe->terms.boxing_act_seconds, 0);
  EXPECT_GT(probe->terms.solutions, 0);
  EXPECT_NE(probe->method.find("boxing act: two-kind fit with tp=2 dp=1, 1/2/4 micro-batches"), std::string::npos)
      << probe->method;
  // An odd device count has no tp = 2 runs: boxing acts cost an act.
  const absl::StatusOr<SharedHostProbe> odd = MeasureSharedHost(1, 2);
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->samples.size(), 4u);
  EXPECT_FALSE(odd->terms.boxing_act_seconds.has_value());
  EXPECT_EQ(MeasureSharedHost(0, 2).status().message(), "the shared host is measured for devices >= 1, not 0");
}

}  // namespace
}  // namespace oneflow::cli
