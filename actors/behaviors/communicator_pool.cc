#include "actors/behaviors/communicator_pool.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/boxing/step_support.h"
#include "oneflow_core/comm/hierarchical/communicator.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

std::string GroupName(const std::vector<std::pair<int64_t, int64_t>>& members) {
  return absl::StrCat("devices [", absl::StrJoin(members, ", ", [](std::string* out, const std::pair<int64_t, int64_t>& d) {
                        absl::StrAppend(out, d.first, ":", d.second);
                      }), "]");
}

std::vector<int64_t> NodesOf(const std::vector<std::pair<int64_t, int64_t>>& members) {
  std::vector<int64_t> nodes;
  for (const auto& [node, device] : members) nodes.push_back(node);
  return nodes;
}

// Another owner's communicator, for a holder that wants to own one (the hierarchical
// communicator owns its cross-node part): the pool keeps the cross-node group and lends it, so
// the hierarchical communicator and two-level steps use the same connections.
class BorrowedCommunicator final : public Communicator {
 public:
  explicit BorrowedCommunicator(Communicator* target) : target_(target) {}

  int64_t size() const override { return target_->size(); }
  int64_t rank() const override { return target_->rank(); }
  std::string Name() const override { return target_->Name(); }
  absl::Status AllReduce(const float* input, float* output, int64_t count,
                         const CollectiveOptions& options) override {
    return target_->AllReduce(input, output, count, options);
  }
  absl::Status ReduceScatter(const float* input, float* output, absl::Span<const int64_t> counts,
                             const CollectiveOptions& options) override {
    return target_->ReduceScatter(input, output, counts, options);
  }
  absl::Status AllGather(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                         const CollectiveOptions& options) override {
    return target_->AllGather(input, output, byte_counts, options);
  }
  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    return target_->AllToAll(input, output, byte_counts, options);
  }
  absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root, const CollectiveOptions& options) override {
    return target_->Broadcast(buffer, bytes, root, options);
  }
  absl::Status Send(const void* data, int64_t bytes, int64_t peer, const CollectiveOptions& options) override {
    return target_->Send(data, bytes, peer, options);
  }
  absl::Status Recv(void* data, int64_t bytes, int64_t peer, const CollectiveOptions& options) override {
    return target_->Recv(data, bytes, peer, options);
  }
  void Abort(const absl::Status& cause) override { target_->Abort(cause); }

 private:
  Communicator* target_;
};

}  // namespace

CommunicatorPool::~CommunicatorPool() {
  // Hierarchical communicators use the in-node groups and borrow the cross-node ones:
  // destroy them first.
  cross_process_.clear();
  transfers_cross_process_.clear();
  cross_node_.clear();
  in_node_.clear();
}

absl::StatusOr<CommunicatorPool::Membership> CommunicatorPool::MembershipOf(int64_t collective_id,
                                                                           const proto::DeviceId& device) const {
  if (collective_id < 0 || collective_id >= plan_.collectives_size()) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no collective ", collective_id));
  }
  const proto::CollectiveDef& collective = plan_.collectives(static_cast<int>(collective_id));
  Membership membership;
  for (const proto::DeviceId& member : collective.group()) {
    if (member.node() == device.node() && member.device() == device.device()) {
      membership.rank = static_cast<int64_t>(membership.members.size());
    }
    membership.members.push_back({member.node(), member.device()});
    membership.all_here &= InThisProcess(member.node());
  }
  if (membership.rank < 0) {
    return absl::FailedPreconditionError(absl::StrCat("device ", device.node(), ":", device.device(),
                                                      " is not in the group of collective ", collective_id));
  }
  return membership;
}

absl::StatusOr<Communicator*> CommunicatorPool::ForCollective(int64_t collective_id,
                                                              const proto::DeviceId& device) {
  OF_ASSIGN_OR_RETURN(const Membership membership, MembershipOf(collective_id, device));
  const DeviceList& members = membership.members;
  const int64_t rank = membership.rank;
  std::string name = GroupName(members);
  std::lock_guard<std::mutex> lock(mutex_);
  if (plan_.collectives(static_cast<int>(collective_id)).kind() == proto::SEND_RECV) {
    // A transfer runs on a thread of its own, outside the group's collective order: a
    // communicator of its own keeps its calls apart from every other collective's.
    absl::StrAppend(&name, " transfer ", collective_id);
    if (membership.all_here) {
      std::unique_ptr<InProcessGroup>& group = transfers_in_process_[collective_id];
      if (group == nullptr) {
        OF_ASSIGN_OR_RETURN(group, InProcessGroup::Create(static_cast<int64_t>(members.size()), name));
      }
      return &group->communicator(rank);
    }
    // Flat: a hierarchical communicator would share its in-node and cross-node
    // parts with the other collectives of the same devices.
    if (options_.rendezvous == nullptr) return NoRendezvous(name);
    std::unique_ptr<Communicator>& communicator = transfers_cross_process_[{collective_id, rank}];
    if (communicator == nullptr) {
      OF_ASSIGN_OR_RETURN(communicator, CrossProcessGroup(absl::StrCat(name, "/flat"), rank, static_cast<int64_t>(members.size())));
    }
    return communicator.get();
  }
  if (membership.all_here) {
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

absl::StatusOr<CommunicatorPool::TwoLevel> CommunicatorPool::TwoLevelForCollective(int64_t collective_id,
                                                                                   const proto::DeviceId& device) {
  OF_ASSIGN_OR_RETURN(const Membership membership, MembershipOf(collective_id, device));
  const DeviceList& members = membership.members;
  absl::StatusOr<NodeLayout> layout = TwoLevelLayout(NodesOf(members));
  if (!layout.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("collective ", collective_id, " over ", GroupName(members),
                                                      " has no two-level form: ", layout.status().message()));
  }
  const int64_t node_position = membership.rank / layout->local_size;
  const int64_t local = membership.rank % layout->local_size;
  std::lock_guard<std::mutex> lock(mutex_);
  TwoLevel two_level;
  if (membership.all_here) {
    InProcessTwoLevel& groups = two_level_in_process_[members];
    if (groups.in_node.empty()) {
      const std::string name = GroupName(members);
      for (int64_t n = 0; n < layout->nodes; ++n) {
        const DeviceList on_node(members.begin() + n * layout->local_size,
                                 members.begin() + (n + 1) * layout->local_size);
        OF_ASSIGN_OR_RETURN(std::unique_ptr<InProcessGroup> group,
                            InProcessGroup::Create(layout->local_size, absl::StrCat(name, " in-node ", GroupName(on_node))));
        groups.in_node.push_back(std::move(group));
      }
      for (int64_t l = 0; l < layout->local_size; ++l) {
        OF_ASSIGN_OR_RETURN(std::unique_ptr<InProcessGroup> group,
                            InProcessGroup::Create(layout->nodes, absl::StrCat(name, " cross-node position ", l)));
        groups.cross_node.push_back(std::move(group));
      }
    }
    two_level.in_node = &groups.in_node[node_position]->communicator(local);
    two_level.cross_node = &groups.cross_node[local]->communicator(node_position);
    return two_level;
  }
  if (options_.rendezvous == nullptr) return NoRendezvous(GroupName(members));
  OF_ASSIGN_OR_RETURN(InProcessGroup * in_node, InNodeGroup(members, layout->local_size, node_position));
  two_level.in_node = &in_node->communicator(local);
  OF_ASSIGN_OR_RETURN(two_level.cross_node,
                      CrossNodeGroup(members, layout->nodes, layout->local_size, membership.rank));
  return two_level;
}

absl::Status CommunicatorPool::NoRendezvous(const std::string& name) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "group ", name, " spans nodes, but this run has no rendezvous store to meet the other nodes' "
      "workers (start it with `oneflow launch` or a worker with RANK/WORLD_SIZE/MASTER_ADDR set)"));
}

absl::StatusOr<std::unique_ptr<Communicator>> CommunicatorPool::CrossProcessGroup(const std::string& name,
                                                                                  int64_t rank, int64_t size) const {
  CrossProcessGroupOptions options;
  // The transport is part of the name: processes that disagree on it never meet.
  options.group_name = absl::StrCat(name, "/", TransportName(options_.transport));
  options.rank = rank;
  options.size = size;
  options.store = options_.rendezvous;
  options.host = options_.worker_host;
  return NewCrossProcessCommunicator(options_.transport, options);
}

absl::StatusOr<InProcessGroup*> CommunicatorPool::InNodeGroup(const DeviceList& members, int64_t local_size,
                                                              int64_t node_position) {
  std::unique_ptr<InProcessGroup>& in_node = in_node_[members];
  if (in_node == nullptr) {
    const DeviceList on_node(members.begin() + node_position * local_size,
                             members.begin() + (node_position + 1) * local_size);
    OF_ASSIGN_OR_RETURN(in_node, InProcessGroup::Create(local_size, absl::StrCat(GroupName(members), " in-node ",
                                                                                 GroupName(on_node))));
  }
  return in_node.get();
}

absl::StatusOr<Communicator*> CommunicatorPool::CrossNodeGroup(const DeviceList& members, int64_t nodes,
                                                              int64_t local_size, int64_t rank) {
  const int64_t local = rank % local_size;
  std::unique_ptr<Communicator>& cross_node = cross_node_[{members, local}];
  if (cross_node == nullptr) {
    OF_ASSIGN_OR_RETURN(cross_node, CrossProcessGroup(absl::StrCat(GroupName(members), "/cross", local), rank / local_size, nodes));
  }
  return cross_node.get();
}

absl::StatusOr<std::unique_ptr<Communicator>> CommunicatorPool::CrossProcess(const DeviceList& members,
                                                                             int64_t rank,
                                                                             const std::string& name) {
  if (options_.rendezvous == nullptr) return NoRendezvous(name);
  const absl::StatusOr<NodeLayout> layout = TwoLevelLayout(NodesOf(members));
  // One member per node (or an irregular group): nothing to gain from a hierarchy.
  if (!layout.ok()) return CrossProcessGroup(absl::StrCat(name, "/flat"), rank, static_cast<int64_t>(members.size()));
  // Hierarchical: the in-node group of this node's members, the cross-process transport
  // among the members at the same local position of every node, and a flat group of it for
  // what is not hierarchical.
  HierarchyOptions options;
  options.name = name;
  options.nodes = layout->nodes;
  options.local_size = layout->local_size;
  OF_ASSIGN_OR_RETURN(InProcessGroup * in_node,
                      InNodeGroup(members, layout->local_size, rank / layout->local_size));
  options.in_node = &in_node->communicator(rank % layout->local_size);
  OF_ASSIGN_OR_RETURN(Communicator * cross_node, CrossNodeGroup(members, layout->nodes, layout->local_size, rank));
  options.cross_node = std::make_unique<BorrowedCommunicator>(cross_node);
  OF_ASSIGN_OR_RETURN(options.flat, CrossProcessGroup(absl::StrCat(name, "/flat"), rank, static_cast<int64_t>(members.size())));
  return NewHierarchicalCommunicator(std::move(options));
}

void CommunicatorPool::AbortAll(const absl::Status& cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto abort_group = [&](InProcessGroup& group) {
    for (int64_t r = 0; r < group.size(); ++r) group.communicator(r).Abort(cause);
  };
  for (auto& [key, group] : in_process_) abort_group(*group);
  for (auto& [key, group] : transfers_in_process_) abort_group(*group);
  for (auto& [key, communicator] : transfers_cross_process_) communicator->Abort(cause);
  for (auto& [key, communicator] : cross_process_) communicator->Abort(cause);
  for (auto& [key, communicator] : cross_node_) communicator->Abort(cause);
  for (auto& [key, group] : in_node_) abort_group(*group);
  for (auto& [key, groups] : two_level_in_process_) {
    for (auto& group : groups.in_node) abort_group(*group);
    for (auto& group : groups.cross_node) abort_group(*group);
  }
}

}  // namespace oneflow::actors
