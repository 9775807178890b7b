// The link fits reproduce what the cost model charges: times priced by
// sbp/collective_cost.h for the calls calibrate makes (all-reduces of 64 B and 16 MiB
// per rank across 2 and 3 processes) fit back to the alpha and beta they were priced with;
// and a link that passes the small call in a burst still gives the call's own alpha.
#include "tools/cli/link_calibration.h"

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "sbp/collective_cost.h"

namespace oneflow::cli {
namespace {

constexpr int64_t kSmall = 64;       // across processes
constexpr int64_t kInProcessSmall = 4 << 10;
constexpr int64_t kLarge = 16 << 20;

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
  EXPECT_EQ(AllReduceWireBytes(2, false).small_bytes, kInProcessSmall);
  EXPECT_EQ(SmallAllReduceBytes(true), kSmall);
  EXPECT_EQ(SmallAllReduceBytes(false), kInProcessSmall);
}

// The emulated hosts' links (bench/lib/netns_hosts.sh: tc tbf at 1 Gbit/s, 128 KiB of
// burst) pass a small call's bytes at once: its time is the call's alpha alone, here the
// 40 us a call took between two emulated hosts (docs/auto_parallel.md, "Prediction on
// emulated hosts"). The large call pays 2 alpha and its bytes at the rate. A 4 KiB small
// call fitted alpha = 40 us - 4 KiB / 119 MB/s = 5.6 us (run 6 there fitted 5.3 us); at
// 64 B the bytes it takes off are 0.5 us.
TEST(LinkCalibrationTest, CrossProcessAlphaIsTheCallsOwnWhereTheLinkPassesSmallCallsInABurst) {
  constexpr double kAlpha = 40e-6;
  constexpr double kRate = 1.19e8;
  LinkTimings timings = AllReduceWireBytes(2, /*cross_process=*/true);
  timings.small_seconds = kAlpha;
  timings.large_seconds = 2 * kAlpha + timings.large_bytes / kRate;
  const LinkLevelMeasurement fit = FitLink(timings, 2);
  EXPECT_NEAR(fit.latency_seconds, kAlpha, 1e-6);
  EXPECT_NEAR(fit.bytes_per_second, kRate, kRate * 1e-3);
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
