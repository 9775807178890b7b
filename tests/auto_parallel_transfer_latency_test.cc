// A pipeline's transfers between nodes priced with the calibrated point-to-point latency
// (LinkModel::inter_node_transfer_latency, the calibration file's "transfer" line) plus
// bytes / bandwidth, against values worked by hand, and without it as before (the
// inter-node round's latency): docs/auto_parallel_measurements.md, "Transfers between
// processes (session 45)".
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

// pp = 2 over 2 nodes of one device, 4 micro-batches, a 1 MB/s link and compute a billion
// times faster than the default, the tied embedding untied (only the activation crosses
// the cut): each of the (4 + 2 - 1) micro-batch slots is one transfer of the activation
// (2 rows x 16 x 32 floats = 4096 B: 0.004096 s of wire) plus the latency, one slot is
// the bubble and four are exposed communication.
absl::StatusOr<proto::AutoParallelPrediction> PriceTinyPipeline(double inter_node_latency,
                                                                const double* transfer_latency,
                                                                double collective_call_seconds = 0) {
  auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  profile.units.back().borrowed_variables.clear();
  auto_parallel::PriceOptions options = TwoNodesOfOneDevice(1e6, 1e20, 1e20);
  options.collective_call_seconds = collective_call_seconds;
  options.cluster.set_inter_node_latency(inter_node_latency);
  if (transfer_latency != nullptr) options.cluster.set_inter_node_transfer_latency(*transfer_latency);
  return auto_parallel::PriceLayout(profile, options, LayoutOf(1, 1, 2, 4));
}

constexpr double kActivationWire = 2.0 * 16 * 32 * 4 / 1e6;

TEST(AutoParallelTransferLatencyTest, EachTransferBetweenNodesPaysTheMeasuredLatency) {
  const double transfer_latency = 1e-3;
  absl::StatusOr<proto::AutoParallelPrediction> priced = PriceTinyPipeline(2e-4, &transfer_latency);
  ASSERT_TRUE(priced.ok()) << priced.status();
  const double slot = kActivationWire + 1e-3;  // 0.005096 s
  EXPECT_NEAR(priced->bubble_seconds(), slot, 1e-12);
  EXPECT_NEAR(priced->exposed_communication_seconds(), 4 * slot, 1e-12);
  EXPECT_NEAR(auto_parallel::StepSeconds(*priced), 5 * slot, 1e-9);  // 0.02548 s
}

TEST(AutoParallelTransferLatencyTest, WithoutTheMeasurementATransferPaysTheRoundsLatency) {
  absl::StatusOr<proto::AutoParallelPrediction> priced = PriceTinyPipeline(2e-4, nullptr);
  ASSERT_TRUE(priced.ok()) << priced.status();
  const double slot = kActivationWire + 2e-4;  // 0.004296 s
  EXPECT_NEAR(priced->bubble_seconds(), slot, 1e-12);
  EXPECT_NEAR(auto_parallel::StepSeconds(*priced), 5 * slot, 1e-9);
  // A measured latency of 0 is a measurement: the transfer is its wire time alone.
  const double zero = 0;
  absl::StatusOr<proto::AutoParallelPrediction> measured_zero = PriceTinyPipeline(2e-4, &zero);
  ASSERT_TRUE(measured_zero.ok()) << measured_zero.status();
  EXPECT_NEAR(auto_parallel::StepSeconds(*measured_zero), 5 * kActivationWire, 1e-9);
}

// Each transfer is a collective call on both ranks (send_recv's all-to-all), priced the
// call cost of every collective call: each stage makes 2 calls per micro-batch (the
// activation's and the gradient's), on its own work, so each of the 5 slots is the
// transfer plus 2 calls (the 1F1B loop: both stages' work, 2c each, and both transfers,
// halved). Without the calls the slots are the transfer alone (the test above).
TEST(AutoParallelTransferLatencyTest, EachTransferIsACallOnBothRanks) {
  const double transfer_latency = 1e-3;
  const double call = 2e-4;
  absl::StatusOr<proto::AutoParallelPrediction> priced = PriceTinyPipeline(2e-4, &transfer_latency, call);
  ASSERT_TRUE(priced.ok()) << priced.status();
  const double slot = kActivationWire + 1e-3 + 2 * call;  // 0.005496 s
  EXPECT_NEAR(priced->bubble_seconds(), slot, 1e-12);
  EXPECT_NEAR(priced->exposed_communication_seconds(), 4 * slot, 1e-12);
  EXPECT_NEAR(auto_parallel::StepSeconds(*priced), 5 * slot, 1e-9);
}

}  // namespace
}  // namespace oneflow
