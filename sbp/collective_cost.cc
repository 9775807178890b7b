#include "sbp/collective_cost.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow {
namespace {

bool IsCollective(BoxingKind kind) {
  return kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter || kind == BoxingKind::kAllGather ||
         kind == BoxingKind::kAllToAll;
}

// Adds one call of `rounds` rounds moving `bytes` to the busiest device on one level.
void AddCall(const LinkModel& links, bool crosses_nodes, int64_t rounds, double bytes, CollectiveCost* cost) {
  cost->latency_seconds += rounds * (crosses_nodes ? links.inter_node_latency : links.intra_node_latency);
  cost->wire_seconds += bytes / (crosses_nodes ? links.inter_node_bandwidth : links.intra_node_bandwidth);
}

// The transport's all-reduce across processes over `members` of `bytes` each: the whole
// input to every peer in one round when small, else reduce-scatter + all-gather rounds.
// `wire_bytes` < 0: use (2(n-1)/n) bytes.
CollectiveCost FlatAllReduce(const LinkModel& links, int64_t members, double bytes, double wire_bytes) {
  CollectiveCost cost;
  cost.route = CollectiveRoute::kFlat;
  if (bytes <= kFlatOneRoundAllReduceBytes) {
    AddCall(links, true, 1, (members - 1) * bytes, &cost);
  } else {
    AddCall(links, true, 2, wire_bytes >= 0 ? wire_bytes : 2.0 * (members - 1) / members * bytes, &cost);
  }
  return cost;
}

}  // namespace

absl::string_view CollectiveRouteName(CollectiveRoute route) {
  switch (route) {
    case CollectiveRoute::kInNode:
      return "in-node";
    case CollectiveRoute::kFlat:
      return "flat";
    case CollectiveRoute::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

std::string FormatMilliseconds(double seconds) { return absl::StrFormat("%.3g ms", seconds * 1e3); }

double CallSeconds(const LinkModel& links, bool crosses_nodes, double bytes) {
  CollectiveCost cost;
  AddCall(links, crosses_nodes, 1, bytes, &cost);
  return cost.seconds();
}

double TransferSeconds(const LinkModel& links, bool crosses_nodes, double bytes) {
  if (!crosses_nodes || !links.inter_node_transfer_latency.has_value()) return CallSeconds(links, crosses_nodes, bytes);
  return *links.inter_node_transfer_latency + bytes / links.inter_node_bandwidth;
}

CollectiveRoute RouteOf(const Placement& placement, int64_t axis, BoxingKind kind) {
  if (!AxisCrossesNodes(placement, axis)) return CollectiveRoute::kInNode;
  const bool hierarchical_kind =
      kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter || kind == BoxingKind::kAllGather;
  if (hierarchical_kind && AxisNodeBlocks(placement, axis).has_value()) return CollectiveRoute::kHierarchical;
  return CollectiveRoute::kFlat;
}

CollectiveCost PriceDenseCollective(const LinkModel& links, const Placement& placement, int64_t axis,
                                    BoxingKind kind, int64_t group_bytes, int64_t wire_bytes) {
  CollectiveCost cost;
  if (!IsCollective(kind)) return cost;
  const int64_t members = placement.hierarchy().dim(axis);
  cost.route = RouteOf(placement, axis, kind);
  const double bytes = static_cast<double>(group_bytes);
  switch (cost.route) {
    case CollectiveRoute::kInNode:
      AddCall(links, false, 1, wire_bytes, &cost);
      cost.text = absl::StrCat("in-node over ", members, " devices, 1 round");
      return cost;
    case CollectiveRoute::kFlat: {
      if (kind == BoxingKind::kAllReduce) {
        cost = FlatAllReduce(links, members, bytes, wire_bytes);
        cost.text = absl::StrCat("flat across nodes over ", members, " devices, ",
                                 bytes <= kFlatOneRoundAllReduceBytes ? "1 round (small: all to every peer)"
                                                                      : "2 rounds");
        return cost;
      }
      AddCall(links, true, 1, wire_bytes, &cost);
      cost.text = absl::StrCat("flat across nodes over ", members, " devices, 1 round");
      return cost;
    }
    case CollectiveRoute::kHierarchical:
      break;
  }
  const NodeBlocks blocks = *AxisNodeBlocks(placement, axis);
  const double nodes = static_cast<double>(blocks.nodes);
  const double local = static_cast<double>(blocks.per_node);
  const double in_node_bytes = (local - 1) / local * bytes;
  CollectiveCost in_node, cross_node;
  if (kind == BoxingKind::kAllReduce) {
    AddCall(links, false, 2, 2 * in_node_bytes, &in_node);  // reduce-scatter, then all-gather
    cross_node = FlatAllReduce(links, blocks.nodes, bytes / local, -1);
  } else {
    AddCall(links, false, 1, in_node_bytes, &in_node);
    AddCall(links, true, 1, (nodes - 1) / nodes * bytes / local, &cross_node);
  }
  cost.latency_seconds = in_node.latency_seconds + cross_node.latency_seconds;
  cost.wire_seconds = in_node.wire_seconds + cross_node.wire_seconds;
  cost.text = absl::StrCat("hierarchical over ", blocks.nodes, " nodes x ", blocks.per_node, ": in-node ",
                           FormatMilliseconds(in_node.seconds()), " + cross-node ",
                           FormatMilliseconds(cross_node.seconds()));
  return cost;
}

}  // namespace oneflow
