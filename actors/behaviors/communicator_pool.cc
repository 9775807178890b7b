#include "actors/behaviors/communicator_pool.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/hierarchical/communicator.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

std::string GroupName(const std::vector<std::pair<int64_t, int64_t>>& members) {
  return absl::StrCat("devices [", absl::StrJoin(members, ", ", [](std::string* out, const std::pair<int64_t, int64_t>& d) {
                        absl::StrAppend(out, d.first, ":", d.second);
                      }), "]");
}

// The shape of a group across nodes: how many nodes, how many members on each, and
// whether its members are listed node by node with the same count on every node (then
// group rank = node position * local_size + local position).
struct NodeShape {
  bool regular = true;
  int64_t nodes = 0;
  int64_t local_size = 0;
};

NodeShape ShapeOf(const std::vector<std::pair<int64_t, int64_t>>& members) {
  NodeShape shape;
  std::vector<int64_t> counts;
  std::vector<int64_t> seen_nodes;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i == 0 || members[i].first != members[i - 1].first) {
      for (int64_t node : seen_nodes) {
        if (node == members[i].first) shape.regular = false;  // The node's members are not contiguous.
      }
      seen_nodes.push_back(members[i].first);
      counts.push_back(0);
    }
    ++counts.back();
  }
  shape.nodes = static_cast<int64_t>(counts.size());
  shape.local_size = counts.empty() ? 0 : counts[0];
  for (int64_t count : counts) shape.regular &= count == shape.local_size;
  return shape;
}

}  // namespace

CommunicatorPool::~CommunicatorPool() {
  // Hierarchical communicators use the in-node groups: destroy them first.
  cross_process_.clear();
  in_node_.clear();
}

absl::StatusOr<Communicator*> CommunicatorPool::ForCollective(int64_t collective_id,
                                                              const proto::DeviceId& device) {
  if (collective_id < 0 || collective_id >= plan_.collectives_size()) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no collective ", collective_id));
  }
  const proto::CollectiveDef& collective = plan_.collectives(static_cast<int>(collective_id));
  DeviceList members;
  int64_t rank = -1;
  bool all_here = true;
  for (const proto::DeviceId& member : collective.group()) {
    if (member.node() == device.node() && member.device() == device.device()) rank = static_cast<int64_t>(members.size());
    members.push_back({member.node(), member.device()});
    all_here &= InThisProcess(member.node());
  }
  if (rank < 0) {
    return absl::FailedPreconditionError(absl::StrCat("device ", device.node(), ":", device.device(),
                                                      " is not in the group of collective ", collective_id));
  }
  const std::string name = GroupName(members);
  std::lock_guard<std::mutex> lock(mutex_);
  if (all_here) {
    std::unique_ptr<InProcessGroup>& group = in_process_[members];
    if (group == nullptr) {
      OF_ASSIGN_OR_RETURN(group, InProcessGroup::Create(static_cast<int64_t>(members.size()), name));
    }
    return &group->communicator(rank);
  }
  std::unique_ptr<Communicator>& communicator = cross_process_[{members, rank}];
  if (communicator == nullptr) {
    OF_ASSIGN_OR_RETURN(communicator, CrossProcess(members, rank, name));
  }
  return communicator.get();
}

absl::StatusOr<std::unique_ptr<Communicator>> CommunicatorPool::CrossProcess(const DeviceList& members,
                                                                             int64_t rank,
                                                                             const std::string& name) {
  if (options_.rendezvous == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "group ", name, " spans nodes, but this run has no rendezvous store to meet the other nodes' "
        "workers (start it with `oneflow launch` or a worker with RANK/WORLD_SIZE/MASTER_ADDR set)"));
  }
  auto gloo = [&](const std::string& suffix, int64_t gloo_rank, int64_t size) {
    GlooGroupOptions options;
    options.group_name = absl::StrCat(name, suffix);
    options.rank = gloo_rank;
    options.size = size;
    options.store = options_.rendezvous;
    options.host = options_.worker_host;
    return NewGlooCommunicator(std::move(options));
  };
  const NodeShape shape = ShapeOf(members);
  if (!shape.regular || shape.local_size == 1) return gloo("/flat", rank, static_cast<int64_t>(members.size()));
  // Hierarchical: the in-node group of this node's members, Gloo among the members at
  // the same local position of every node, and flat Gloo for what is not hierarchical.
  const int64_t node_position = rank / shape.local_size;
  const int64_t local = rank % shape.local_size;
  DeviceList local_members(members.begin() + node_position * shape.local_size,
                           members.begin() + (node_position + 1) * shape.local_size);
  std::unique_ptr<InProcessGroup>& in_node = in_node_[members];
  if (in_node == nullptr) {
    OF_ASSIGN_OR_RETURN(in_node, InProcessGroup::Create(shape.local_size, absl::StrCat(name, " in-node ", GroupName(local_members))));
  }
  HierarchyOptions options;
  options.name = name;
  options.nodes = shape.nodes;
  options.local_size = shape.local_size;
  options.in_node = &in_node->communicator(local);
  OF_ASSIGN_OR_RETURN(options.cross_node, gloo(absl::StrCat("/cross", local), node_position, shape.nodes));
  OF_ASSIGN_OR_RETURN(options.flat, gloo("/flat", rank, static_cast<int64_t>(members.size())));
  return NewHierarchicalCommunicator(std::move(options));
}

void CommunicatorPool::AbortAll(const absl::Status& cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, group] : in_process_) {
    for (int64_t r = 0; r < group->size(); ++r) group->communicator(r).Abort(cause);
  }
  for (auto& [key, communicator] : cross_process_) communicator->Abort(cause);
  for (auto& [key, group] : in_node_) {
    for (int64_t r = 0; r < group->size(); ++r) group->communicator(r).Abort(cause);
  }
}

}  // namespace oneflow::actors
