// The simulator must catch the planner bugs it exists for: a forgotten reduction, a
// reduction of replicated data, and a per-axis step taken in an invalid order.
#include "sbp/boxing_simulator.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

const Shape kLogical{5, 7};

std::vector<float> Values() {
  std::vector<float> values(kLogical.NumElements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  return values;
}

BoxingStep Step(BoxingKind kind, int64_t axis, const char* src, const char* dst) {
  BoxingStep step;
  step.kind = kind;
  step.hierarchy_axis = axis;
  step.src = *NdSbp::Parse(src);
  step.dst = *NdSbp::Parse(dst);
  return step;
}

TEST(BoxingSimulatorTest, DistributedLayoutsHoldTheLogicalTensor) {
  const Placement placement = *Placement::Parse("cpu{0:0-2, 1:0-2}[2, 3]");
  for (const char* text :
       {"[B, B]", "[S(0), S(1)]", "[S(0), S(0)]", "[P, S(1)]", "[P, P]", "[B, P]", "[S(1), P]"}) {
    absl::StatusOr<SimulatedTensor> tensor =
        Distribute(kLogical, Values(), *NdSbp::Parse(text), placement, /*seed=*/3);
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_TRUE(CheckHoldsLogical(kLogical, Values(), *tensor, placement, 1e-4f).ok()) << text;
  }
}

TEST(BoxingSimulatorTest, PartialPartsAreARealDecomposition) {
  const Placement placement = *Placement::Parse("cpu{0:0-2}");
  absl::StatusOr<SimulatedTensor> tensor =
      Distribute(kLogical, Values(), *NdSbp::Parse("P"), placement, /*seed=*/3);
  ASSERT_TRUE(tensor.ok());
  // No device holds the value, and no device holds zeros: forgetting to reduce, or
  // taking one device's buffer, gives wrong numbers.
  for (const std::vector<float>& buffer : tensor->buffers) {
    EXPECT_NE(buffer, Values());
    EXPECT_NE(buffer, std::vector<float>(buffer.size(), 0.0f));
  }
  // Relabelled as B without a reduction, the check fails and names the element.
  SimulatedTensor relabelled = *tensor;
  relabelled.nd_sbp = *NdSbp::Parse("B");
  const absl::Status status = CheckHoldsLogical(kLogical, Values(), relabelled, placement, 1e-4f);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message().substr(0, 28), "rank 0 (coordinate 0) elemen") << status;
}

TEST(BoxingSimulatorTest, AllReduceOfBroadcastDataIsCaught) {
  const Placement placement = *Placement::Parse("cpu{0:0-1}");
  absl::StatusOr<SimulatedTensor> tensor =
      Distribute(kLogical, Values(), *NdSbp::Parse("B"), placement, /*seed=*/3);
  ASSERT_TRUE(tensor.ok());
  BoxingStep wrong = Step(BoxingKind::kAllReduce, 0, "B", "B");
  ASSERT_TRUE(SimulateStep(kLogical, wrong, placement, placement, &*tensor).ok());
  // Every element doubled; element [0, 1] is 0.25 logically.
  EXPECT_EQ(CheckHoldsLogical(kLogical, Values(), *tensor, placement, 1e-4f).message(),
            "rank 0 (coordinate 0) element [0, 1]: holds 0.5, the logical value is 0.25");
}

TEST(BoxingSimulatorTest, InvalidAxisOrderFailsWithTheMissingElement) {
  // [S(0), S(0)] -> [B, S(0)] by an outer all-gather is not a collective of the outer
  // groups: device (0, 0) needs rows [0, 3) (the first inner part of the whole), but its
  // group, devices (0, 0) and (1, 0), holds rows [0, 2) and [3, 4) (the first inner
  // parts of each outer part). Row 2 is missing.
  const Placement placement = *Placement::Parse("cpu{0:0-3}[2, 2]");
  absl::StatusOr<SimulatedTensor> tensor =
      Distribute(kLogical, Values(), *NdSbp::Parse("[S(0), S(0)]"), placement, /*seed=*/3);
  ASSERT_TRUE(tensor.ok());
  const absl::Status status =
      SimulateStep(kLogical, Step(BoxingKind::kAllGather, 0, "[S(0), S(0)]", "[B, S(0)]"),
                   placement, placement, &*tensor);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(std::string(status.message()),
            "step all_gather axis 0: [S(0), S(0)] -> [B, S(0)], 0 bytes/device: rank 0 needs "
            "element [2, 0], which its group along hierarchy axis 0 does not hold");
}

TEST(BoxingSimulatorTest, StepsMustChainAndStayOnTheirAxis) {
  const Placement placement = *Placement::Parse("cpu{0:0-3}[2, 2]");
  absl::StatusOr<SimulatedTensor> tensor =
      Distribute(kLogical, Values(), *NdSbp::Parse("[B, B]"), placement, /*seed=*/3);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(SimulateStep(kLogical, Step(BoxingKind::kLocalSlice, 0, "[B, P]", "[S(0), P]"),
                         placement, placement, &*tensor)
                .message(),
            "step local_slice axis 0: [B, P] -> [S(0), P], 0 bytes/device expects [B, P] but the "
            "tensor is [B, B]");
  EXPECT_EQ(SimulateStep(kLogical, Step(BoxingKind::kLocalSlice, 0, "[B, B]", "[S(0), S(0)]"),
                         placement, placement, &*tensor)
                .message(),
            "step local_slice axis 0: [B, B] -> [S(0), S(0)], 0 bytes/device changes more than "
            "hierarchy axis 0");
}

TEST(BoxingSimulatorTest, SendRecvCopiesSlicesAcrossPlacements) {
  const Placement from = *Placement::Parse("cpu{0:0-1}");
  const Placement to = *Placement::Parse("cuda{1:0-2}");
  BoxingPlan plan;
  plan.steps.push_back(Step(BoxingKind::kSendRecv, -1, "S(1)", "S(0)"));
  absl::StatusOr<SimulatedTensor> result =
      SimulatePlan(kLogical, Values(), *NdSbp::Parse("S(1)"), from, plan, to, /*seed=*/3);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(CheckHoldsLogical(kLogical, Values(), *result, to, 0).ok());
  // Sending a partial value would need a reduction on the way.
  plan.steps[0] = Step(BoxingKind::kSendRecv, -1, "P", "B");
  EXPECT_EQ(
      SimulatePlan(kLogical, Values(), *NdSbp::Parse("P"), from, plan, to, 3).status().message(),
      "step send_recv: P -> B, 0 bytes/device sends a partial value");
}

}  // namespace
}  // namespace oneflow
