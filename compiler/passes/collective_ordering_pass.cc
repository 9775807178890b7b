#include "compiler/passes/collective_ordering_pass.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "compiler/passes/reduction_tail_order.h"

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

// The groups one collective was made for: the groups of one hierarchy axis of one
// placement (every step and bucket over that axis has the same groups), or {-1, -1} for
// a transfer.
struct GroupClass {
  int64_t placement = -1;
  int64_t hierarchy_axis = -1;
  bool operator<(const GroupClass& other) const {
    return std::tie(placement, hierarchy_axis) < std::tie(other.placement, other.hierarchy_axis);
  }
};

// Puts each collective on a communication stream: one stream per class of groups, so a
// device's data-parallel reductions (one axis) and its tensor-parallel collectives
// (another axis) are issued by different threads and do not wait for each other where
// nothing else orders them. Classes that share a group (the same device list: one
// communicator) become one stream, which keeps every communicator on one thread. Streams
// are numbered by their first collective; with CompileOptions::one_communication_stream
// every collective is on stream 0 (the order before streams, for comparison).
void AssignStreams(const Compilation& compilation, const std::vector<GroupClass>& classes, proto::Plan* plan) {
  plan->clear_streams();
  std::map<GroupClass, int> class_index;
  for (const GroupClass& group_class : classes) {
    if (group_class.placement >= 0) class_index.emplace(group_class, static_cast<int>(class_index.size()));
  }
  // Union-find over classes, merged through the groups they share.
  std::vector<int> parent(class_index.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<std::vector<std::pair<int64_t, int64_t>>, int> class_of_group;
  for (int c = 0; c < plan->collectives_size(); ++c) {
    if (classes[c].placement < 0) continue;
    std::vector<std::pair<int64_t, int64_t>> key;
    for (const proto::DeviceId& device : plan->collectives(c).group()) key.push_back({device.node(), device.device()});
    const int mine = class_index.at(classes[c]);
    auto [it, inserted] = class_of_group.emplace(key, mine);
    if (!inserted) parent[find(mine)] = find(it->second);
  }
  const bool one = compilation.options.one_communication_stream;
  std::map<int, int64_t> stream_of_root;           // Union-find root -> stream id.
  std::vector<std::vector<GroupClass>> members;  // Per stream: its classes, first seen first.
  for (int c = 0; c < plan->collectives_size(); ++c) {
    proto::CollectiveDef* collective = plan->mutable_collectives(c);
    if (classes[c].placement < 0) {
      collective->set_stream(0);
      continue;
    }
    const int root = one ? 0 : find(class_index.at(classes[c]));
    auto [it, inserted] = stream_of_root.emplace(root, static_cast<int64_t>(members.size()));
    if (inserted) members.emplace_back();
    collective->set_stream(it->second);
    std::vector<GroupClass>& seen = members[it->second];
    if (std::find_if(seen.begin(), seen.end(), [&](const GroupClass& g) {
          return !(g < classes[c]) && !(classes[c] < g);
        }) == seen.end()) {
      seen.push_back(classes[c]);
    }
  }
  for (size_t s = 0; s < members.size(); ++s) {
    std::vector<std::string> parts;
    for (const GroupClass& group_class : members[s]) {
      const Placement& placement = compilation.graph.placements[group_class.placement];
      const int64_t size = placement.hierarchy().dim(group_class.hierarchy_axis);
      const int64_t groups = placement.num_devices() / std::max<int64_t>(1, size);
      parts.push_back(absl::StrCat("axis ", group_class.hierarchy_axis, " of ", placement.ToString(), " (", groups,
                                   groups == 1 ? " group of " : " groups of ", size, ")"));
    }
    proto::CommunicationStreamDef* stream = plan->add_streams();
    stream->set_id(static_cast<int64_t>(s));
    stream->set_name(absl::StrJoin(parts, " + "));
  }
}

// Appends a gradient bucket's collectives (one all-reduce or reduce-scatter per group of
// its members' axis)
// and hands them to the bucket's actors (gradient_bucketing_pass.h).
void OrderBucket(Compilation* compilation, const GradientBucket& bucket,
                 const std::vector<std::pair<int32_t, int32_t>>& actors,
                 std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t>* next_order,
                 std::vector<GroupClass>* classes, const std::string& order_reason) {
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
    collective->set_kind(bucket.kind == BoxingKind::kReduceScatter ? proto::REDUCE_SCATTER : proto::ALL_REDUCE);
    std::vector<std::pair<int64_t, int64_t>> key;
    for (const DeviceId& device : group) {
      proto::DeviceId* id = collective->add_group();
      id->set_node(device.node);
      id->set_device(device.device);
      key.push_back({device.node, device.device});
    }
    collective->set_order((*next_order)[key]++);
    classes->push_back({bucket.placement, first_step.hierarchy_axis});
    collective->set_tensor(absl::StrCat("bucket_", bucket.id));
    *collective->mutable_src_sbp() = first_step.src.ToProto();
    *collective->mutable_dst_sbp() = first_step.dst.ToProto();
    collective->set_hierarchy_axis(first_step.hierarchy_axis);
    collective->set_bytes_per_device(bytes_per_device);
    collective->set_reason(absl::StrCat("gradient bucket ", bucket.id, " of ", tensors.size(), " gradients: ",
                                        absl::StrJoin(tensors, ", "), order_reason.empty() ? "" : "; ",
                                        order_reason));
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
  // Per collective: the class of groups it was made for (its stream's seed).
  std::vector<GroupClass> classes;
  compilation->boxing_step_collective.assign(compilation->boxings.size(), {});
  for (const Boxing& boxing : compilation->boxings) {
    compilation->boxing_step_collective[boxing.id].assign(boxing.plan.steps.size(), -1);
  }
  // One step that runs on its own, on `placement`.
  auto order_step = [&](const Boxing& boxing, size_t s, int64_t placement, const std::string& order_reason = "") {
    const BoxingStep& step = boxing.plan.steps[s];
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
      // A transfer's placement pair is no group class: it is on no stream.
      classes.push_back(step.kind == BoxingKind::kSendRecv ? GroupClass{-1, -1}
                                                           : GroupClass{placement, step.hierarchy_axis});
      collective->set_tensor(compilation->graph.tensors[boxing.tensor].name);
      *collective->mutable_src_sbp() = step.src.ToProto();
      *collective->mutable_dst_sbp() = step.dst.ToProto();
      collective->set_hierarchy_axis(step.hierarchy_axis);
      collective->set_bytes_per_device(step.bytes_per_device);
      collective->set_reason(order_reason.empty() ? boxing.reason : absl::StrCat(boxing.reason, "; ", order_reason));
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
  };
  // Early steps (gradient_bucketing_pass.h) from step `from` on: reductions, on the
  // tensor's placement.
  auto order_early = [&](int64_t b, int64_t from, const std::string& order_reason = "") {
    const Boxing& boxing = compilation->boxings[b];
    const int64_t placement = compilation->graph.tensors[boxing.tensor].placement;
    const int64_t end = EarlyStepsEnd(*compilation, b, from);
    for (int64_t s = from; s < end; ++s) {
      if (IsCollective(boxing.plan.steps[s].kind)) {
        order_step(boxing, static_cast<size_t>(s), placement, s == from ? order_reason : "");
      }
    }
  };
  // The node-crossing gradient reductions (reduction_tail_order.h): a walk that only
  // lists them, in the order the numbering walk below meets them, then the tail the cost
  // model reorders. The numbering walk holds the tail's reductions back as it meets them
  // and numbers them, each with the steps that follow it early, in the tail's order when
  // it meets the last one (or sooner, when a step of a held reduction's boxing is due).
  bool listing = true;
  std::vector<TailReduction> listed;
  ReductionTailOrder tail;
  std::vector<size_t> held;  // Indices into tail.reductions.
  // The tail reductions each boxing has a step in (a 2-D chain's boxing may have two).
  absl::flat_hash_map<int64_t, std::vector<size_t>> tail_reductions_of_boxing;
  const auto tail_index = [&](const TailReduction& reduction) -> std::optional<size_t> {
    for (size_t k = tail.first; k < tail.reductions.size(); ++k) {
      if (tail.reductions[k] == reduction) return k;
    }
    return std::nullopt;
  };
  const auto emit_reduction = [&](const TailReduction& reduction, const std::string& order_reason) {
    if (reduction.boxing >= 0) {
      order_early(reduction.boxing, 0, order_reason);
      return;
    }
    const GradientBucket& bucket = compilation->buckets[reduction.bucket];
    OrderBucket(compilation, bucket, bucket_actors[reduction.bucket], &next_order, &classes, order_reason);
    for (const auto& [b, s] : bucket.members) order_early(b, s + 1);
  };
  // Once held reductions had to go before the tail was complete (below), the rest of the
  // tail goes in backward's order.
  bool tail_cut = false;
  const auto release_held = [&]() {
    tail_cut = tail_cut || held.size() < tail.reductions.size() - tail.first;
    for (size_t i = 0; i < tail.order.size(); ++i) {
      if (std::find(held.begin(), held.end(), tail.order[i]) == held.end()) continue;
      emit_reduction(tail.reductions[tail.order[i]], tail.reasons[i]);
    }
    held.clear();
  };
  // A step of a held reduction's boxing is due (its next level's bucket, a later step at
  // its consumer): the held reductions go first, so every boxing's steps keep their order.
  // Only a held one's: a step of a tail reduction not met yet (the in-node reduce-scatter
  // bucket of a 2-D chain whose node-crossing level is in the tail) comes before that
  // reduction anyway, and releasing there cut the tail before its last reduction, which on
  // gpt_dp3tp2 was the one holding the embeddings and the first blocks' gradients: issued
  // last, the next forward waited for all of the tail.
  const auto release_before = [&](int64_t boxing) {
    if (held.empty()) return;
    const auto it = tail_reductions_of_boxing.find(boxing);
    if (it == tail_reductions_of_boxing.end()) return;
    for (const size_t k : it->second) {
      if (std::find(held.begin(), held.end(), k) != held.end()) {
        release_held();
        return;
      }
    }
  };
  const auto meet_reduction = [&](const TailReduction& reduction) {
    if (listing) {
      listed.push_back(reduction);
      return;
    }
    const std::optional<size_t> k = tail_index(reduction);
    if (!k.has_value() || tail_cut) {
      for (const auto& [b, s] : ReductionMembers(*compilation, reduction)) release_before(b);
      emit_reduction(reduction, "");
      return;
    }
    held.push_back(*k);
    if (held.size() == tail.reductions.size() - tail.first) release_held();
  };
  const auto crossing = [&](const TailReduction& reduction) {
    if (reduction.boxing >= 0) {
      const Boxing& boxing = compilation->boxings[reduction.boxing];
      return StepCrossesNodes(*compilation, reduction.boxing, 0, compilation->graph.tensors[boxing.tensor].placement);
    }
    const GradientBucket& bucket = compilation->buckets[reduction.bucket];
    return StepCrossesNodes(*compilation, bucket.members.front().first, bucket.members.front().second,
                            bucket.placement);
  };
  // The rest of a boxing, where lowering emits it: before its first consumer.
  auto order_boxing = [&](const Boxing& boxing) {
    release_before(boxing.id);
    int64_t placement = compilation->graph.tensors[boxing.tensor].placement;
    for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      const bool elsewhere = BucketOf(*compilation, boxing.id, static_cast<int64_t>(s)) >= 0 ||
                             IsEarlyStep(*compilation, boxing.id, static_cast<int64_t>(s));
      // A bucketed step is numbered with its bucket (the plan records the bucket's
      // collective on the step), an early one after its producer.
      if (IsCollective(step.kind) && !elsewhere) order_step(boxing, s, placement);
      if (step.kind == BoxingKind::kSendRecv) placement = boxing.dst_placement;
    }
  };
  const std::vector<std::vector<int64_t>> early_after_op = EarlyBoxingsAfterOps(*compilation);
  size_t next_bucket = 0;
  // What lowering emits right after op `op` (-1: before every op): the early steps of
  // the tensors it produces, then the buckets whose last member it produces, each
  // followed by its members' early steps.
  auto order_after = [&](int64_t op) {
    if (op + 1 < static_cast<int64_t>(early_after_op.size())) {
      for (int64_t b : early_after_op[op + 1]) {
        const TailReduction alone{.boxing = b};
        if (BucketOf(*compilation, b, 0) == kAloneEarly && crossing(alone)) {
          meet_reduction(alone);
        } else if (!listing) {
          release_before(b);
          order_early(b, 0);
        }
      }
    }
    for (; next_bucket < compilation->buckets.size() && compilation->buckets[next_bucket].after_op <= op;
         ++next_bucket) {
      const TailReduction bucket{.bucket = static_cast<int64_t>(next_bucket)};
      if (crossing(bucket)) {
        meet_reduction(bucket);
      } else if (!listing) {
        for (const auto& [b, s] : compilation->buckets[next_bucket].members) release_before(b);
        emit_reduction(bucket, "");
      }
    }
  };
  // The walk lowering makes (lowering_pass.cc): every device's program is this order
  // restricted to its placement, so numbering collectives in it gives each device an
  // increasing sequence (the tail's reductions apart, above). The first pass only lists
  // the node-crossing reductions (buckets and early steps are all met in order_after).
  for (const bool list : {true, false}) {
    listing = list;
    next_bucket = 0;
    if (!listing) {
      tail = ChooseReductionTailOrder(*compilation, listed);
      for (size_t k = tail.first; k < tail.reductions.size(); ++k) {
        for (const auto& [b, s] : ReductionMembers(*compilation, tail.reductions[k])) {
          tail_reductions_of_boxing[b].push_back(k);
        }
      }
    }
    size_t next_boxing = 0;
    order_after(-1);
    for (size_t o = 0; o < compilation->graph.ops.size(); ++o) {
      for (int64_t b : compilation->graph.ops[o].input_boxings) {
        while (b >= 0 && static_cast<int64_t>(next_boxing) <= b) {
          if (!listing) order_boxing(compilation->boxings[next_boxing]);
          ++next_boxing;
        }
      }
      order_after(static_cast<int64_t>(o));
    }
    while (next_boxing < compilation->boxings.size()) {
      if (!listing) order_boxing(compilation->boxings[next_boxing]);
      ++next_boxing;
    }
    order_after(INT64_MAX - 1);
  }
  if (!held.empty()) release_held();
  AssignStreams(*compilation, classes, &plan);
  return plan.collectives_size() > 0;
}

}  // namespace oneflow
