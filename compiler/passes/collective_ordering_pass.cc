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

proto::CollectiveKind SparseCollectiveKindOf(BoxingKind kind) {
  switch (kind) {
    case BoxingKind::kAllReduce:
      return proto::SPARSE_ALL_REDUCE;
    case BoxingKind::kReduceScatter:
      return proto::SPARSE_REDUCE_SCATTER;
    case BoxingKind::kAllGather:
      return proto::SPARSE_ALL_GATHER;
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


// Appends a gradient bucket's collectives (one all-reduce per group of its members' axis)
// and hands them to the bucket's actors (gradient_bucketing_pass.h).
void OrderBucket(Compilation* compilation, const GradientBucket& bucket,
                 const std::vector<std::pair<int32_t, int32_t>>& actors,
                 std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t>* next_order) {
  proto::Plan& plan = compilation->plan;
  const Boxing& first = compilation->boxings[bucket.members.front().first];
  const BoxingStep& first_step = first.plan.steps[bucket.members.front().second];
  int64_t bytes_per_device = 0;
  std::vector<std::string> tensors;
  for (const auto& [b, s] : bucket.members) {
    const Boxing& boxing = compilation->boxings[b];
    bytes_per_device += boxing.plan.steps[s].bytes_per_device;
    tensors.push_back(compilation->graph.tensors[boxing.tensor].name);
  }
  compilation->bucket_collective[bucket.id] = plan.collectives_size();
  for (const std::vector<DeviceId>& group : Groups(*compilation, first, first_step, bucket.placement)) {
    proto::CollectiveDef* collective = plan.add_collectives();
    collective->set_id(plan.collectives_size() - 1);
    collective->set_kind(proto::ALL_REDUCE);
    std::vector<std::pair<int64_t, int64_t>> key;
    for (const DeviceId& device : group) {
      proto::DeviceId* id = collective->add_group();
      id->set_node(device.node);
      id->set_device(device.device);
      key.push_back({device.node, device.device});
    }
    collective->set_order((*next_order)[key]++);
    collective->set_tensor(absl::StrCat("bucket_", bucket.id));
    *collective->mutable_src_sbp() = first_step.src.ToProto();
    *collective->mutable_dst_sbp() = first_step.dst.ToProto();
    collective->set_hierarchy_axis(first_step.hierarchy_axis);
    collective->set_bytes_per_device(bytes_per_device);
    collective->set_reason(absl::StrCat("gradient bucket ", bucket.id, " of ", tensors.size(), " gradients: ",
                                        absl::StrJoin(tensors, ", ")));
    for (const auto& [device_index, actor_index] : actors) {
      const DeviceId& device = compilation->devices[device_index].device;
      if (std::find(group.begin(), group.end(), device) == group.end()) continue;
      proto::DevicePlan* device_plan = plan.mutable_devices(device_index);
      device_plan->mutable_actors(actor_index)->set_collective_id(collective->id());
      device_plan->add_collective_order(collective->id());
    }
  }
}

}  // namespace

absl::StatusOr<bool> CollectiveOrderingPass::Run(Compilation* compilation) {
  proto::Plan& plan = compilation->plan;
  plan.clear_collectives();
  for (proto::DevicePlan& device : *plan.mutable_devices()) device.clear_collective_order();
  // Next `order` per communicator group, keyed by its device list.
  std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> next_order;
  // Gradient buckets sit among the boxings where lowering emitted them: after the op
  // producing their last member's input, so before every boxing emitted after that op.
  compilation->bucket_collective.assign(compilation->buckets.size(), -1);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> bucket_actors(compilation->buckets.size());
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (int a = 0; a < plan.devices(static_cast<int>(d)).actors_size(); ++a) {
      const proto::ActorDef& actor = plan.devices(static_cast<int>(d)).actors(a);
      if (actor.has_bucket_id() && actor.bucket_id() >= 0 &&
          actor.bucket_id() < static_cast<int64_t>(bucket_actors.size())) {
        bucket_actors[actor.bucket_id()].push_back({static_cast<int32_t>(d), a});
      }
    }
  }
  const std::vector<int64_t> emitted_before = BoxingEmissionOps(*compilation);
  size_t next_bucket = 0;
  auto order_buckets_before = [&](int64_t op) {
    for (; next_bucket < compilation->buckets.size() && compilation->buckets[next_bucket].after_op < op;
         ++next_bucket) {
      OrderBucket(compilation, compilation->buckets[next_bucket], bucket_actors[next_bucket], &next_order);
    }
  };
  // Boxings are numbered in the topological order every device follows, so numbering
  // collectives in that order gives each device an increasing sequence.
  compilation->boxing_step_collective.assign(compilation->boxings.size(), {});
  for (const Boxing& boxing : compilation->boxings) {
    order_buckets_before(emitted_before[boxing.id]);
    compilation->boxing_step_collective[boxing.id].assign(boxing.plan.steps.size(), -1);
    int64_t placement = compilation->graph.tensors[boxing.tensor].placement;
    for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      if (!IsCollective(step.kind)) continue;
      if (const int64_t bucket = BucketOf(*compilation, boxing.id, static_cast<int64_t>(s)); bucket >= 0) {
        // Numbered with its bucket; the plan records the bucket's collective on the step.
        if (step.kind == BoxingKind::kSendRecv) placement = boxing.dst_placement;
        continue;
      }
      compilation->boxing_step_collective[boxing.id][s] = plan.collectives_size();
      for (const std::vector<DeviceId>& group : Groups(*compilation, boxing, step, placement)) {
        proto::CollectiveDef* collective = plan.add_collectives();
        collective->set_id(plan.collectives_size() - 1);
        collective->set_kind(boxing.sparse.has_value() ? SparseCollectiveKindOf(step.kind) : CollectiveKindOf(step.kind));
        if (boxing.sparse.has_value()) {
          collective->mutable_sparsity()->set_kind(boxing.sparse->kind);
          collective->mutable_sparsity()->set_max_rows(boxing.sparse->max_rows);
        }
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
          // A transfer runs on its own thread and communicator, in no device's order.
          if (step.kind != BoxingKind::kSendRecv) device_plan->add_collective_order(collective->id());
        }
      }
      if (step.kind == BoxingKind::kSendRecv) placement = boxing.dst_placement;
    }
  }
  order_buckets_before(INT64_MAX);
  return plan.collectives_size() > 0;
}

}  // namespace oneflow
