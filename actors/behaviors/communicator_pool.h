// The communicators of a run: one group per distinct device list among the plan's
// collectives, created on first use, so every collective over the same devices shares a
// communicator and the static collective order keeps their calls in step.
//
// Which backend a group gets depends on where its devices live:
//   - every member in this process: an in-process group (shared memory);
//   - members on several nodes, the same number on each, listed node by node: a
//     hierarchical communicator per local member (in-node shared memory, Gloo across
//     nodes among the members at the same local position, flat Gloo for the rest);
//   - otherwise (or one member per node): a flat Gloo group.
// Gloo groups meet through `rendezvous` under a name derived from the device list, the
// same in every process because every process reads the same plan.
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
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct CommunicatorPoolOptions {
  // The node this process runs; < 0: every node of the plan runs in this process.
  int64_t node = -1;
  // Needed only for groups with members in other processes.
  KeyValueStore* rendezvous = nullptr;
  std::string worker_host = "127.0.0.1";
};

class CommunicatorPool {
 public:
  CommunicatorPool(const proto::Plan& plan, CommunicatorPoolOptions options)
      : plan_(plan), options_(std::move(options)) {}
  ~CommunicatorPool();

  // The communicator of `device` in the group of collective `collective_id`.
  absl::StatusOr<Communicator*> ForCollective(int64_t collective_id, const proto::DeviceId& device);

  // Fails every group: used when the run stops so no peer waits out its timeout.
  void AbortAll(const absl::Status& cause);

 private:
  using DeviceList = std::vector<std::pair<int64_t, int64_t>>;  // (node, device)

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
  // Per (group, rank) communicators that reach other processes.
  std::map<std::pair<DeviceList, int64_t>, std::unique_ptr<Communicator>> cross_process_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_COMMUNICATOR_POOL_H_
