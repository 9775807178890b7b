// The link fits reproduce what the cost model charges: times priced by
// sbp/collective_cost.h for the calls calibrate makes (all-reduces of 64 B and 16 MiB
// per rank across 2 and 3 processes) fit back to the alpha and beta they were priced with.
#include "tools/cli/link_calibration.h"

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

// A transfer's round trip priced by the model (TransferSeconds each way) fits back to the
// latency it was priced with; a round trip faster than its bytes allow gives 0.
TEST(LinkCalibrationTest, TransferRoundTripFitsBackToTheTransferLatency) {
  LinkModel links = Links();
  links.inter_node_transfer_latency = 1.2e-4;
  const double round_trip = 2 * TransferSeconds(links, /*crosses_nodes=*/true, kTransferBytes);
  const TransferMeasurement fit = FitTransfer(round_trip, kTransferBytes, links.inter_node_bandwidth);
  EXPECT_NEAR(fit.latency_seconds, 1.2e-4, 1e-15);
  EXPECT_EQ(fit.round_trip_seconds, round_trip);
  EXPECT_EQ(fit.bytes, kTransferBytes);
  EXPECT_EQ(FitTransfer(1e-6, 4096, 2e9).latency_seconds, 0);  // 4 KiB take 2 us each way
  EXPECT_EQ(kTransferBytes, kCalibrationSmallBytes);
}

// A burst of other work that slows one window of calls does not move the median of the
// windows (the daemons' alpha from one window ranged 88-314 us within 15 minutes, session
// 48): here the first window's calls sleep 30 ms each and the other four's return at once,
// so one window (what calibrate took before) times 30 ms and five windows the fast calls.
// Every window makes its warm-up call and `repetitions` timed ones, `gap` apart.
TEST(LinkCalibrationTest, TheMedianOfWindowsLeavesOutAWindowOfSlowCalls) {
  constexpr int64_t kRepetitions = 3;
  int64_t calls = 0;
  auto slow_first_window = [&calls]() -> absl::Status {
    if (calls++ < 1 + kRepetitions) absl::SleepFor(absl::Milliseconds(30));
    return absl::OkStatus();
  };
  const absl::Time start = absl::Now();
  const absl::StatusOr<double> windows =
      MedianOfWindows(5, absl::Milliseconds(20), kRepetitions, slow_first_window);
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_TRUE(windows.ok()) << windows.status();
  EXPECT_LT(*windows, 0.010);
  EXPECT_EQ(calls, 5 * (1 + kRepetitions));
  EXPECT_GE(elapsed, absl::Milliseconds(4 * 20 + 4 * 30));
  calls = 0;
  const absl::StatusOr<double> one = MedianOfWindows(1, absl::Milliseconds(20), kRepetitions, slow_first_window);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GE(*one, 0.030);
}

// The first failing call's status comes back, and no window after it runs.
TEST(LinkCalibrationTest, TheMedianOfWindowsStopsAtTheFirstError) {
  int64_t calls = 0;
  const absl::StatusOr<double> windows = MedianOfWindows(5, absl::ZeroDuration(), 2, [&calls]() -> absl::Status {
    return ++calls == 7 ? absl::UnavailableError("peer 2 left") : absl::OkStatus();
  });
  EXPECT_EQ(windows.status(), absl::UnavailableError("peer 2 left"));
  EXPECT_EQ(calls, 7);  // windows of 3 calls: the third window's first
}

}  // namespace
}  // namespace oneflow::cli
