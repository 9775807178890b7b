// The link fits reproduce what the cost model charges: times priced by
// sbp/collective_cost.h for the calls calibrate makes (all-reduces of 64 B and 16 MiB
// per rank across 2 and 3 processes) fit back to the alpha and beta they were priced with.
#include "tools/cli/link_calibration.h"

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "sbp/collective_cost.h"

namespace oneflow::cli {
namespace {

constexpr int64_t kSmall = kCalibrationSmallBytes;
constexpr int64_t kLarge = kCalibrationLargeBytes;

LinkModel Links() {
  LinkModel links;
  links.intra_node_bandwidth = 1e10;
  links.inter_node_bandwidth = 2e9;
  links.intra_node_latency = 5e-6;
  links.inter_node_latency = 3e-4;
  return links;
}

void ExpectFitsBack(const std::string& placement_text, int64_t ranks) {
  const Placement hosts = *Placement::Parse(placement_text);
  LinkTimings timings = AllReduceWireBytes(ranks, /*cross_process=*/true);
  // -1: the flat route's own formula for the bytes the busiest rank receives.
  timings.small_seconds = PriceDenseCollective(Links(), hosts, 0, BoxingKind::kAllReduce, kSmall, -1).seconds();
  timings.large_seconds = PriceDenseCollective(Links(), hosts, 0, BoxingKind::kAllReduce, kLarge, -1).seconds();
  const LinkLevelMeasurement fit = FitLink(timings, 2);
  EXPECT_NEAR(fit.latency_seconds, 3e-4, 3e-4 * 1e-9) << placement_text;
  EXPECT_NEAR(fit.bytes_per_second, 2e9, 2e9 * 1e-9) << placement_text;
}

TEST(LinkCalibrationTest, CrossProcessFitReproducesTheFlatAllReduceOfTwoAndThreeNodes) {
  ExpectFitsBack("cpu{0:0, 1:0}", 2);
  ExpectFitsBack("cpu{0:0, 1:0, 2:0}", 3);
}

TEST(LinkCalibrationTest, WireBytesOfEachRoute) {
  const LinkTimings two = AllReduceWireBytes(2, true);
  EXPECT_EQ(two.small_bytes, kSmall);
  EXPECT_EQ(two.large_bytes, kLarge);
  const LinkTimings three = AllReduceWireBytes(3, true);
  EXPECT_EQ(three.small_bytes, 2.0 * kSmall);
  EXPECT_DOUBLE_EQ(three.large_bytes, 4.0 / 3 * kLarge);
  // In-process: one round of 2 (n-1)/n at both sizes.
  EXPECT_EQ(AllReduceWireBytes(2, false).small_bytes, kSmall);
}

// Alpha is the time of the small call: 64 B take 0.5 us at 1 Gbit/s, so a link that
// delivers small messages faster than its bandwidth (a tc tbf burst) cannot take alpha to 0
// as it did with 4 KiB (34 us of modelled wire). Measured 50 us for 64 B and 140 ms for
// 16 MiB at 1 Gbit/s: alpha is 50 us less the 64 B at the fitted rate, within 2% of 50 us.
TEST(LinkCalibrationTest, TheSmallCallMeasuresTheLatency) {
  EXPECT_LT(kSmall / 1.25e8, 1e-6);
  LinkTimings timings = AllReduceWireBytes(2, true);
  timings.small_seconds = 50e-6;
  timings.large_seconds = 0.140;
  const LinkLevelMeasurement fit = FitLink(timings, 2);
  const double rate = (kLarge - 2.0 * kSmall) / (0.140 - 2 * 50e-6);
  EXPECT_NEAR(fit.bytes_per_second, rate, 1e-6 * rate);
  EXPECT_NEAR(fit.latency_seconds, 50e-6 - kSmall / rate, 1e-12);
  EXPECT_GT(fit.latency_seconds, 0.98 * 50e-6);
}

TEST(LinkCalibrationTest, NoisyTimesGiveZeroLatencyAndTheLargeSizesBandwidth) {
  LinkTimings timings = AllReduceWireBytes(2, true);
  timings.small_seconds = 0.01;  // slower than the large call allows: alpha would be < 0
  timings.large_seconds = 0.008;
  const LinkLevelMeasurement fit = FitLink(timings, 2);
  EXPECT_EQ(fit.latency_seconds, 0);
  EXPECT_DOUBLE_EQ(fit.bytes_per_second, kLarge / 0.008);
}

}  // namespace
}  // namespace oneflow::cli
