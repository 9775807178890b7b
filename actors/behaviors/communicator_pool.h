// The communicators of a run: one group per distinct device list among the plan's
// collectives, created on first use, so every collective over the same devices shares a
// communicator and the static collective order keeps their calls in step.
//
// Which backend a group gets depends on where its devices live:
//   - every member in this process: an in-process group (shared memory);
//   - members on several nodes, the same number on each, listed node by node: a
//     hierarchical communicator per local member (in-node shared memory, the cross-process
//     transport across nodes among the members at the same local position, a flat group of
//     it for the rest);
//   - otherwise (or one member per node): a flat group of the cross-process transport.
// The cross-process transport is `CommunicatorPoolOptions::transport`: UCX by default
// (faster than Gloo for small and large messages: docs/collectives.md), Gloo when chosen (`--transport=gloo`). Its groups
// meet through `rendezvous` under a name derived from the device list, the same in every
// process because every process reads the same plan.
//
// A two-level compressed step (kernels/boxing/boxing_step.h) runs over two communicators
// of its group instead of one: the in-node group of its node's members, and the
// cross-node group of the members at the same position on every node. All members in
// this process: in-process groups. Otherwise the hierarchical communicator's parts: the
// same in-node in-process group and the same cross-node group, which the pool owns
// and lends to the hierarchical communicator, so one group has one set of connections.
// Sharing is safe for the reason sharing a group between collectives is: every member
// issues the group's collectives in the plan's static order, one at a time.
#ifndef ACTORS_BEHAVIORS_COMMUNICATOR_POOL_H_
#define ACTORS_BEHAVIORS_COMMUNICATOR_POOL_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/transport.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct CommunicatorPoolOptions {
  // The node this process runs; < 0: every node of the plan runs in this process.
  int64_t node = -1;
  // Needed only for groups with members in other processes.
  KeyValueStore* rendezvous = nullptr;
  std::string worker_host = "127.0.0.1";
  // The transport of groups with members in other processes.
  Transport transport = kDefaultTransport;
};

class CommunicatorPool {
 public:
  CommunicatorPool(const proto::Plan& plan, CommunicatorPoolOptions options)
      : plan_(plan), options_(std::move(options)) {}
  ~CommunicatorPool();

  // The communicator of `device` in the group of collective `collective_id`.
  absl::StatusOr<Communicator*> ForCollective(int64_t collective_id, const proto::DeviceId& device);

  struct TwoLevel {
    Communicator* in_node = nullptr;     // ranks = position on the node
    Communicator* cross_node = nullptr;  // ranks = node position in the group
  };

  // The two communicators of `device` for a two-level step over the group of collective
  // `collective_id`. FAILED_PRECONDITION naming the collective when its group is not
  // listed node by node with the same number (> 1) of members on each of > 1 nodes.
  absl::StatusOr<TwoLevel> TwoLevelForCollective(int64_t collective_id, const proto::DeviceId& device);

  // Fails every group: used when the run stops so no peer waits out its timeout.
  void AbortAll(const absl::Status& cause);

 private:
  using DeviceList = std::vector<std::pair<int64_t, int64_t>>;  // (node, device)

  struct Membership {
    DeviceList members;
    int64_t rank = -1;  // the device's
    bool all_here = true;
  };
  absl::StatusOr<Membership> MembershipOf(int64_t collective_id, const proto::DeviceId& device) const;
  // The in-process group of this node's members of a group with members elsewhere, and
  // the cross-process group of its members at position `local` on every node (created on first
  // use; the caller holds mutex_).
  absl::StatusOr<InProcessGroup*> InNodeGroup(const DeviceList& members, int64_t local_size, int64_t node_position);
  absl::StatusOr<Communicator*> CrossNodeGroup(const DeviceList& members, int64_t nodes, int64_t local_size,
                                              int64_t rank);
  // A group of the cross-process transport.
  absl::StatusOr<std::unique_ptr<Communicator>> CrossProcessGroup(const std::string& name, int64_t rank,
                                                                  int64_t size) const;
  // FAILED_PRECONDITION: group `name` spans processes and this run has no rendezvous.
  absl::Status NoRendezvous(const std::string& name) const;

  bool InThisProcess(int64_t node) const { return options_.node < 0 || node == options_.node; }
  // The communicator of group rank `rank` for a group with members in other processes.
  absl::StatusOr<std::unique_ptr<Communicator>> CrossProcess(const DeviceList& members, int64_t rank,
                                                             const std::string& name);

  const proto::Plan& plan_;
  const CommunicatorPoolOptions options_;
  std::mutex mutex_;
  // Groups whose members all live here.
  std::map<DeviceList, std::unique_ptr<InProcessGroup>> in_process_;
  // In-node parts of hierarchical groups: the members of this node, by group.
  std::map<DeviceList, std::unique_ptr<InProcessGroup>> in_node_;
  // Cross-node groups (of the cross-process transport) of groups with members elsewhere, per (group, position on
  // the node); lent to the hierarchical communicators.
  std::map<std::pair<DeviceList, int64_t>, std::unique_ptr<Communicator>> cross_node_;
  // Per (group, rank) communicators that reach other processes.
  std::map<std::pair<DeviceList, int64_t>, std::unique_ptr<Communicator>> cross_process_;
  // Transfers (SEND_RECV collectives) have communicators of their own, by collective id:
  // in-process groups, and (collective id, rank) communicators reaching other processes.
  std::map<int64_t, std::unique_ptr<InProcessGroup>> transfers_in_process_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Communicator>> transfers_cross_process_;
  // Two-level groups whose members all live here: one in-process group per node, then
  // one per position on the node.
  struct InProcessTwoLevel {
    std::vector<std::unique_ptr<InProcessGroup>> in_node;
    std::vector<std::unique_ptr<InProcessGroup>> cross_node;
  };
  std::map<DeviceList, InProcessTwoLevel> two_level_in_process_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_COMMUNICATOR_POOL_H_
