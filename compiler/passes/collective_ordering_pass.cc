#include "compiler/passes/collective_ordering_pass.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace {

proto::CollectiveKind CollectiveKindOf(BoxingKind kind) {
  switch (kind) {
    case BoxingKind::kAllReduce:
      return proto::ALL_REDUCE;
    case BoxingKind::kReduceScatter:
      return proto::REDUCE_SCATTER;
    case BoxingKind::kAllGather:
      return proto::ALL_GATHER;
    case BoxingKind::kAllToAll:
      return proto::ALL_TO_ALL;
    case BoxingKind::kSendRecv:
      return proto::SEND_RECV;
    default:
      return proto::COLLECTIVE_INVALID;
  }
}

// The communicator groups of a step: for a per-axis step on a placement, the devices
// that differ only in the step's hierarchy axis; for a send/recv, every device of both
// placements (sources first).
std::vector<std::vector<DeviceId>> Groups(const Compilation& compilation, const Boxing& boxing,
                                          const BoxingStep& step, int64_t placement) {
  const LogicalGraph& graph = compilation.graph;
  if (step.kind == BoxingKind::kSendRecv) {
    std::vector<DeviceId> group = graph.placements[graph.tensors[boxing.tensor].placement].devices();
    for (const DeviceId& device : graph.placements[boxing.dst_placement].devices()) {
      if (std::find(group.begin(), group.end(), device) == group.end()) group.push_back(device);
    }
    return {group};
  }
  const Placement& where = graph.placements[placement];
  const int64_t axis = step.hierarchy_axis;
  std::vector<std::vector<DeviceId>> groups;
  for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
    std::vector<int64_t> coordinate = where.Coordinate(rank);
    if (coordinate[axis] != 0) continue;
    std::vector<DeviceId> group;
    for (int64_t i = 0; i < where.hierarchy().dim(axis); ++i) {
      coordinate[axis] = i;
      group.push_back(where.device(where.RankOf(coordinate)));
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace

absl::StatusOr<bool> CollectiveOrderingPass::Run(Compilation* compilation) {
  proto::Plan& plan = compilation->plan;
  plan.clear_collectives();
  for (proto::DevicePlan& device : *plan.mutable_devices()) device.clear_collective_order();
  // Next `order` per communicator group, keyed by its device list.
  std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> next_order;
  // Boxings are numbered in the topological order every device follows, so numbering
  // collectives in that order gives each device an increasing sequence.
  compilation->boxing_step_collective.assign(compilation->boxings.size(), {});
  for (const Boxing& boxing : compilation->boxings) {
    compilation->boxing_step_collective[boxing.id].assign(boxing.plan.steps.size(), -1);
    int64_t placement = compilation->graph.tensors[boxing.tensor].placement;
    for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      if (!IsCollective(step.kind)) continue;
      compilation->boxing_step_collective[boxing.id][s] = plan.collectives_size();
      for (const std::vector<DeviceId>& group : Groups(*compilation, boxing, step, placement)) {
        proto::CollectiveDef* collective = plan.add_collectives();
        collective->set_id(plan.collectives_size() - 1);
        collective->set_kind(CollectiveKindOf(step.kind));
        std::vector<std::pair<int64_t, int64_t>> key;
        for (const DeviceId& device : group) {
          proto::DeviceId* id = collective->add_group();
          id->set_node(device.node);
          id->set_device(device.device);
          key.push_back({device.node, device.device});
        }
        collective->set_order(next_order[key]++);
        collective->set_tensor(compilation->graph.tensors[boxing.tensor].name);
        *collective->mutable_src_sbp() = step.src.ToProto();
        *collective->mutable_dst_sbp() = step.dst.ToProto();
        collective->set_hierarchy_axis(step.hierarchy_axis);
        collective->set_bytes_per_device(step.bytes_per_device);
        collective->set_reason(boxing.reason);
        // The actors of this step on the group's devices issue it.
        for (const auto& [device_index, actor_index] : compilation->boxing_step_actors[boxing.id][s]) {
          const DeviceId& device = compilation->devices[device_index].device;
          if (std::find(group.begin(), group.end(), device) == group.end()) continue;
          proto::DevicePlan* device_plan = plan.mutable_devices(device_index);
          device_plan->mutable_actors(actor_index)->set_collective_id(collective->id());
          device_plan->add_collective_order(collective->id());
        }
      }
      if (step.kind == BoxingKind::kSendRecv) placement = boxing.dst_placement;
    }
  }
  return plan.collectives_size() > 0;
}

}  // namespace oneflow
