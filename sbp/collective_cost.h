// The time of one dense collective, priced as the runtime runs it.
//
// Which algorithm runs is decided by where the group's devices sit (devices of one node
// are threads of one process, nodes are processes; actors/behaviors/communicator_pool.cc):
//
//   route           when                                  algorithm (its file)
//   in-node         the group is inside one node          in-process: every rank reads its
//                                                         peers' buffers, one round
//                                                         (oneflow_core/comm/in_process)
//   flat            the group crosses nodes, and is not   the cross-process transport's
//                   nodes x equal runs (NodeBlocks), or   direct schedules: all-reduce in
//                   the call is an all_to_all             two rounds (one when a rank's
//                                                         input is at most 64 KiB: all of it
//                                                         to every peer), the others in one
//                                                         (oneflow_core/comm/gloo/schedules.h)
//   hierarchical    the group crosses nodes as NodeBlocks in-node, then cross-node among the
//                                                         devices of one local index, then
//                                                         in-node (comm/hierarchical)
//
// Each call costs alpha + bytes / beta per round and per level (LinkModel: latency and
// bandwidth of the level), where bytes are what the busiest device receives in that
// call. For T bytes per member (the group tensor) over n = N nodes x L devices:
//   in-node / flat all_reduce   rounds x alpha + 2(n-1)/n T / beta  (small: (n-1) T)
//   reduce_scatter, all_gather  alpha + (n-1)/n T / beta
//   all_to_all                  alpha + (n-1)/n^2 T / beta
//   hierarchical all_reduce     in-node reduce_scatter (L-1)/L T, cross-node all_reduce of
//                               T/L (flat rule), in-node all_gather (L-1)/L T
//   hierarchical reduce_scatter in-node (L-1)/L T, then cross-node (N-1)/N T/L
//   hierarchical all_gather     cross-node (N-1)/N T/L, then in-node (L-1)/L T
// The cost model keeps its own copy of the transport's one-round limit
// (kFlatOneRoundAllReduceBytes); collective_cost_test.cc checks it equals the runtime's.
#ifndef SBP_COLLECTIVE_COST_H_
#define SBP_COLLECTIVE_COST_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "oneflow_core/placement.h"
#include "sbp/boxing_plan.h"
#include "sbp/link_model.h"

namespace oneflow {

// All-reduces of at most this many bytes per rank run in one round across processes
// (gloo_backend::kSmallAllReduceBytes).
constexpr int64_t kFlatOneRoundAllReduceBytes = 64 * 1024;

enum class CollectiveRoute { kInNode, kFlat, kHierarchical };

// "in-node", "flat", "hierarchical".
absl::string_view CollectiveRouteName(CollectiveRoute route);

struct CollectiveCost {
  CollectiveRoute route = CollectiveRoute::kInNode;
  // The alpha terms (rounds x latency of their level) and the bytes / beta terms.
  double latency_seconds = 0;
  double wire_seconds = 0;
  // How it was priced, e.g. "hierarchical over 2 nodes x 2: in-node 0.0105 ms +
  // cross-node 1.2 ms + in-node 0.0105 ms" or "flat across 3 nodes, 2 rounds".
  std::string text;

  double seconds() const { return latency_seconds + wire_seconds; }
};

// The route the runtime takes for a `kind` collective over the groups of hierarchy axis
// `axis` of `placement`. Precondition: 0 <= axis < hierarchy rank.
CollectiveRoute RouteOf(const Placement& placement, int64_t axis, BoxingKind kind);

// The dense `kind` collective (kAllReduce, kReduceScatter, kAllGather or kAllToAll) over
// the groups of axis `axis`, T = `group_bytes` per member as the top of this file
// defines it, and `wire_bytes` what the busiest device receives as boxing counts it
// (BoxingStep::dense_bytes_per_device: the formulas above with the largest part of an
// uneven split), which the in-node and flat routes use. Other kinds cost 0.
// Preconditions: CheckLinkModel(links) is OK, 0 <= axis < hierarchy rank, bytes >= 0.
CollectiveCost PriceDenseCollective(const LinkModel& links, const Placement& placement, int64_t axis,
                                    BoxingKind kind, int64_t group_bytes, int64_t wire_bytes);

// One call of one round on one level: latency + bytes / bandwidth.
double CallSeconds(const LinkModel& links, bool crosses_nodes, double bytes);

// One point-to-point transfer of `bytes` (a pipeline's send_recv between two stages):
// across nodes the measured transfer latency (LinkModel::inter_node_transfer_latency; the
// round's latency when not measured) + bytes / inter-node bandwidth; inside a node as
// CallSeconds.
double TransferSeconds(const LinkModel& links, bool crosses_nodes, double bytes);

// "1.25 ms" with 3 significant digits: the unit of the cost model's sentences.
std::string FormatMilliseconds(double seconds);

}  // namespace oneflow

#endif  // SBP_COLLECTIVE_COST_H_
