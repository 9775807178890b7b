// PreparedBoxingStep::Prepare refuses a two-level step that cannot run, naming the step
// and what is wrong, before any communication (so one thread prepares every device).
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/step_testing.h"

namespace oneflow {
namespace {

// A valid two-level all_reduce P -> B of 12 f32 on `placement` for device `rank`, its
// communicators from `communicators` (null when not given).
BoxingStepArgs AllReduce(const Placement& placement, int64_t rank, const TwoLevelAxisCommunicators* communicators) {
  BoxingStepArgs args;
  args.logical = Shape{12};
  args.kind = BoxingKind::kAllReduce;
  args.src = *NdSbp::Parse("P");
  args.dst = *NdSbp::Parse("B");
  args.placement = &placement;
  args.rank = rank;
  args.input_bytes = 48;
  args.output_bytes = 48;
  args.compression = {Codec::kInt8, 512, true};
  args.cross_node_compression = {Codec::kInt4, 128, true};
  if (communicators != nullptr) {
    args.in_node_communicator = communicators->InNode(rank);
    args.cross_node_communicator = communicators->CrossNode(rank);
  }
  return args;
}

std::string Name(const std::string& kind_and_sbp, const std::string& placement, int64_t rank) {
  return absl::StrCat("boxing step ", kind_and_sbp, " on ", placement, ", rank ", rank, ": ");
}

TEST(TwoLevelStepErrorsTest, GroupsThatAreNotRegularAcrossNodes) {
  struct Case {
    std::vector<DeviceId> devices;
    std::string message;
  };
  const std::string form = "cannot run the two-level form (int8 in the node, int4 across nodes): ";
  const std::vector<Case> cases = {
      {{{0, 0}, {0, 1}, {0, 2}, {0, 3}},
       "the group [0:0, 0:1, 0:2, 0:3] along hierarchy axis 0 " + form +
           "its members are on nodes [0, 0, 0, 0]; a two-level step needs more than one node and more than one "
           "member per node (1 node of 4)"},
      {{{0, 0}, {1, 0}, {2, 0}},
       "the group [0:0, 1:0, 2:0] along hierarchy axis 0 " + form +
           "its members are on nodes [0, 1, 2]; a two-level step needs more than one node and more than one "
           "member per node (3 nodes of 1)"},
      {{{0, 0}, {1, 0}, {0, 1}, {1, 1}},
       "the group [0:0, 1:0, 0:1, 1:1] along hierarchy axis 0 " + form +
           "its members are on nodes [0, 1, 0, 1]; a two-level step needs them listed node by node"},
      {{{0, 0}, {0, 1}, {0, 2}, {1, 0}},
       "the group [0:0, 0:1, 0:2, 1:0] along hierarchy axis 0 " + form +
           "its members are on nodes [0, 0, 0, 1]; a two-level step needs the same number of members on every "
           "node"},
  };
  for (const Case& c : cases) {
    const Placement placement = *Placement::Create(DeviceType::kCpu, c.devices);
    const absl::Status status = PreparedBoxingStep::Prepare(AllReduce(placement, 0, nullptr)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << placement.ToString();
    EXPECT_EQ(status.message(), Name("all_reduce axis 0 of f32 [12]: P -> B", placement.ToString(), 0) + c.message);
  }
}

// Hierarchy [3, 4] over 2 nodes x 6: along axis 1 the middle group (0:4 0:5 1:0 1:1) is
// regular, the others lie on one node. Its devices refuse the step too, naming the first
// bad group, so that no device of the step waits for one that refused.
TEST(TwoLevelStepErrorsTest, EveryGroupOfTheStepMustBeRegular) {
  const Placement placement = *Placement::Parse("cpu{0:0-5, 1:0-5}[3, 4]");
  BoxingStepArgs args = AllReduce(placement, 4, nullptr);
  args.src = *NdSbp::Parse("[B, P]");
  args.dst = *NdSbp::Parse("[B, B]");
  args.hierarchy_axis = 1;
  const absl::Status status = PreparedBoxingStep::Prepare(args).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            Name("all_reduce axis 1 of f32 [12]: [B, P] -> [B, B]", placement.ToString(), 4) +
                "the group [0:0, 0:1, 0:2, 0:3] along hierarchy axis 1 cannot run the two-level form (int8 in the "
                "node, int4 across nodes): its members are on nodes [0, 0, 0, 0]; a two-level step needs more than "
                "one node and more than one member per node (1 node of 4)");
}

TEST(TwoLevelStepErrorsTest, CodecsKindsAndCommunicators) {
  const Placement placement = *Placement::Parse("cpu{0:0-2, 1:0-2}");
  TwoLevelAxisCommunicators communicators(placement, 0);
  // Rank 4 is 1:1: position 1 on node 1.
  const std::string name = Name("all_reduce axis 0 of f32 [12]: P -> B", placement.ToString(), 4);
  struct Case {
    std::function<void(BoxingStepArgs&)> change;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](BoxingStepArgs& a) { a.compression = CodecOptions(); }, absl::StatusCode::kInvalidArgument,
       name + "cross-node codec int4 without an in-node codec; a two-level step compresses both levels"},
      {[](BoxingStepArgs& a) { a.cross_node_compression.group_size = 100; }, absl::StatusCode::kInvalidArgument,
       name + "cross-node: codec int4 with hadamard: group_size is 100; the Walsh-Hadamard transform needs a "
                  "power of two in [32, 2048]"},
      {[](BoxingStepArgs& a) {
         a.kind = BoxingKind::kAllGather;
         a.src = *NdSbp::Parse("S(0)");
         a.input_bytes = 8;
       },
       absl::StatusCode::kUnimplemented,
       Name("all_gather axis 0 of f32 [12]: S(0) -> B", placement.ToString(), 4) +
           "two-level compression (int8 in the node, int4 across nodes) is implemented for all_reduce and "
           "reduce_scatter of f32 tensors only"},
      {[](BoxingStepArgs& a) { a.dtype = DType::kI32; }, absl::StatusCode::kUnimplemented,
       Name("all_reduce axis 0 of i32 [12]: P -> B", placement.ToString(), 4) +
           "two-level compression (int8 in the node, int4 across nodes) is implemented for all_reduce and "
           "reduce_scatter of f32 tensors only"},
      {[](BoxingStepArgs& a) { a.cross_node_communicator = nullptr; }, absl::StatusCode::kInvalidArgument,
       name + "a two-level step needs its in-node and its cross-node communicator"},
      {[&](BoxingStepArgs& a) { std::swap(a.in_node_communicator, a.cross_node_communicator); },
       absl::StatusCode::kInvalidArgument,
       name + "the in-node communicator is " + communicators.CrossNode(4)->Name() +
           "; this device's group has 3 members on each node and it is number 1 on its own"},
      // 0:1's: the right group (position 1), but ranked for node 0.
      {[&](BoxingStepArgs& a) { a.cross_node_communicator = communicators.CrossNode(1); },
       absl::StatusCode::kInvalidArgument,
       name + "the cross-node communicator is " + communicators.CrossNode(1)->Name() +
           "; this device's group spans 2 nodes and its node is number 1"},
  };
  ASSERT_TRUE(PreparedBoxingStep::Prepare(AllReduce(placement, 4, &communicators)).ok());
  for (const Case& c : cases) {
    BoxingStepArgs args = AllReduce(placement, 4, &communicators);
    c.change(args);
    const absl::Status status = PreparedBoxingStep::Prepare(args).status();
    EXPECT_EQ(status.code(), c.code) << status;
    EXPECT_EQ(status.message(), c.message);
  }
}

}  // namespace
}  // namespace oneflow
