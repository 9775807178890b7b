// What PreparedBoxingStep::Prepare checks of a step's compression (group_step.h,
// CheckCompression): which steps have a compressed form, the codec options, and for the
// two-level form the layout of the step's groups across nodes and the two communicators.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/boxing/group_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "kernels/boxing/step_support.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace boxing_internal {
namespace {

bool IsReduction(BoxingKind kind) {
  return kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter;
}

// The group along the step's axis through `coordinate`, as "[0:0, 0:1, 1:0, 1:1]", and
// the node of each member in group rank order.
std::string GroupNodes(const Placement& placement, int64_t axis, std::vector<int64_t> coordinate,
                       std::vector<int64_t>* nodes) {
  std::vector<std::string> names;
  nodes->clear();
  for (int64_t g = 0; g < placement.hierarchy().dim(axis); ++g) {
    coordinate[axis] = g;
    const DeviceId& device = placement.device(placement.RankOf(coordinate));
    names.push_back(device.ToString());
    nodes->push_back(device.node);
  }
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

// Every group of the step (the devices differing only on its axis) must be regular
// across nodes, not only this device's: all devices then agree whether the step can run.
// Returns this device's group's layout.
absl::StatusOr<NodeLayout> CheckGroupLayouts(const GroupStep& step, const BoxingStepArgs& args) {
  const Placement& placement = *args.placement;
  std::vector<int64_t> nodes;
  for (int64_t leader = 0; leader < placement.num_devices(); ++leader) {
    const std::vector<int64_t> coordinate = placement.Coordinate(leader);
    if (coordinate[step.axis] != 0) continue;
    const std::string group = GroupNodes(placement, step.axis, coordinate, &nodes);
    absl::StatusOr<NodeLayout> layout = TwoLevelLayout(nodes);
    if (!layout.ok()) {
      return step.Error(absl::StrCat("the group ", group, " along hierarchy axis ", step.axis,
                                     " cannot run the two-level form (", CodecName(args.compression.codec),
                                     " in the node, ", CodecName(args.cross_node_compression.codec),
                                     " across nodes): ", layout.status().message()));
    }
  }
  GroupNodes(placement, step.axis, placement.Coordinate(args.rank), &nodes);
  return TwoLevelLayout(nodes);
}

absl::Status CheckTwoLevelCommunicators(const GroupStep& step, const BoxingStepArgs& args,
                                        const NodeLayout& layout) {
  if (args.in_node_communicator == nullptr || args.cross_node_communicator == nullptr) {
    return step.Error("a two-level step needs its in-node and its cross-node communicator");
  }
  const Communicator& in_node = *args.in_node_communicator;
  const Communicator& cross_node = *args.cross_node_communicator;
  const int64_t local = step.me % layout.local_size;
  const int64_t node = step.me / layout.local_size;
  if (in_node.size() != layout.local_size || in_node.rank() != local) {
    return step.Error(absl::StrCat("the in-node communicator is ", in_node.Name(), "; this device's group has ",
                                   layout.local_size, " members on each node and it is number ", local,
                                   " on its own"));
  }
  if (cross_node.size() != layout.nodes || cross_node.rank() != node) {
    return step.Error(absl::StrCat("the cross-node communicator is ", cross_node.Name(),
                                   "; this device's group spans ", layout.nodes, " nodes and its node is number ",
                                   node));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCompression(const GroupStep& step, const BoxingStepArgs& args) {
  const Codec codec = args.compression.codec;
  if (codec == Codec::kNone && !args.two_level()) return absl::OkStatus();
  if (codec == Codec::kNone) {
    return step.Error(absl::StrCat("cross-node codec ", CodecName(args.cross_node_compression.codec),
                                   " without an in-node codec; a two-level step compresses both levels"));
  }
  if (args.two_level()) {
    if (!IsReduction(step.kind) || args.dtype != DType::kF32) {
      return absl::UnimplementedError(absl::StrCat(
          step.name, ": two-level compression (", CodecName(codec), " in the node, ",
          CodecName(args.cross_node_compression.codec),
          " across nodes) is implemented for all_reduce and reduce_scatter of f32 tensors only"));
    }
  } else if ((!IsReduction(step.kind) && step.kind != BoxingKind::kAllGather) || args.dtype != DType::kF32) {
    return absl::UnimplementedError(absl::StrCat(step.name, ": compressed (", CodecName(codec),
                                                 ") is implemented for all_reduce, reduce_scatter and all_gather "
                                                 "of f32 tensors only"));
  }
  OF_RETURN_IF_ERROR(WithContext(CheckCodecOptions(args.compression), step.name));
  if (!args.two_level()) return absl::OkStatus();
  OF_RETURN_IF_ERROR(
      WithContext(CheckCodecOptions(args.cross_node_compression), absl::StrCat(step.name, ": cross-node")));
  OF_ASSIGN_OR_RETURN(const NodeLayout layout, CheckGroupLayouts(step, args));
  return CheckTwoLevelCommunicators(step, args, layout);
}

absl::StatusOr<int64_t> ResidualElements(const GroupStep& step, const BoxingStepArgs& args) {
  if (!args.error_feedback) return 0;
  if ((!IsReduction(step.kind) && step.kind != BoxingKind::kAllGather) || args.dtype != DType::kF32 ||
      args.compression.codec == Codec::kNone) {
    return step.Error(absl::StrCat("error feedback is for compressed all_reduce, reduce_scatter and all_gather "
                                   "steps of f32 gradients; this step is ",
                                   args.compression.codec == Codec::kNone ? "dense" : CodecName(args.compression.codec),
                                   " ", BoxingKindName(step.kind), " of ", DTypeName(args.dtype)));
  }
  if (step.kind == BoxingKind::kAllReduce) {
    const int64_t count = step.dst[step.me].NumElements();
    if (!args.two_level()) return AllReduceResidualElements(count, step.size(), step.me);
    const Communicator& in_node = *args.in_node_communicator;
    const Communicator& cross_node = *args.cross_node_communicator;
    return TwoLevelAllReduceResidualElements(count, cross_node.size(), in_node.size(), cross_node.rank(),
                                             in_node.rank());
  }
  if (step.kind == BoxingKind::kAllGather) {
    // The shard this device encodes: its source slice within its destination
    // (collective_steps.cc, RunAllGather). There is no two-level all_gather step.
    std::vector<int64_t> counts;
    for (const TensorSlice& source : step.src) counts.push_back(Intersect(source, step.dst[step.me]).NumElements());
    return AllGatherResidualElements(counts, step.me);
  }
  std::vector<int64_t> counts;
  for (const TensorSlice& box : step.dst) counts.push_back(box.NumElements());
  if (!args.two_level()) return ReduceScatterResidualElements(counts);
  return TwoLevelReduceScatterResidualElements(counts, args.in_node_communicator->size(),
                                               args.in_node_communicator->rank());
}

}  // namespace boxing_internal
}  // namespace oneflow
