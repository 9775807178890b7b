// A communicator for a group that spans `nodes` nodes with `local_size` devices each,
// built from three others: `in_node` among the devices of this node (shared memory, the
// in-process backend), `cross_node` among the devices with this device's local index on
// every node (Gloo), and `flat` among all of them (Gloo). Group rank = node * local_size +
// local.
//
// Why: across nodes the network is the bottleneck. A flat all-reduce sends 2(n-1)/n T per
// device over it; done hierarchically, each device sends 2(N-1)/N T/L across nodes (N
// nodes, L devices per node), L times less, and the rest moves through shared memory.
//
//   all_reduce      in-node reduce-scatter (balanced split over local ranks) ->
//                   cross-node all-reduce of this device's shard -> in-node all-gather
//   reduce_scatter  in-node reduce-scatter of the chunks grouped by local index ->
//                   cross-node reduce-scatter (one copy of the input into scratch first)
//   all_gather      cross-node all-gather among same-local devices -> in-node all-gather
//                   (one copy out of scratch last)
//   all_to_all, broadcast, send/recv: through `flat`.
// Reductions add within a node in local order, then across nodes in node order:
// (x0 + x1) + (x2 + x3) for 2 nodes x 2, where `flat` would add ((x0 + x1) + x2) + x3. The
// result is the same on every rank and every run, and exact for max and min, but for sums
// it may differ from the flat rank order in the last bits (it is a different association).
//
// A failed step aborts all three communicators (the in-node group, hence every device of
// this node, and the Gloo groups, hence their peers on the other nodes), and every later
// call fails with FAILED_PRECONDITION naming the first error. Abort aborts all three.
#ifndef ONEFLOW_CORE_COMM_HIERARCHICAL_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_HIERARCHICAL_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {

struct HierarchyOptions {
  // For messages: "hierarchical group 'dp' rank 3 of 4 (2 nodes x 2)". May be empty.
  std::string name;
  int64_t nodes = 1;
  int64_t local_size = 1;
  // Ranks = local index, size local_size. Not owned: an InProcessGroup owns its
  // communicators; it must outlive the hierarchical communicator.
  Communicator* in_node = nullptr;
  // Ranks = node index, size nodes: the devices with this device's local index. Owned.
  std::unique_ptr<Communicator> cross_node;
  // Ranks = group rank, size nodes * local_size. Owned.
  std::unique_ptr<Communicator> flat;
};

// INVALID_ARGUMENT when a communicator is missing or its size or rank does not fit the
// shape (flat rank must be cross_node rank * local_size + in_node rank).
absl::StatusOr<std::unique_ptr<Communicator>> NewHierarchicalCommunicator(HierarchyOptions options);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_HIERARCHICAL_COMMUNICATOR_H_
