// The cost model of the links between devices, as boxing sees it.
//
// Two numbers are enough for the choices boxing makes: devices of one node talk through
// shared memory (or NVLink), devices of different nodes through the network, and the
// second is typically 5-50x slower. Boxing turns bytes per device into seconds with
// these, so it can prefer a sequence that keeps most traffic inside nodes (the
// hierarchical all-reduce on a [nodes, devices] placement falls out of this).
//
// A collective runs over a group of devices that differ only in one hierarchy
// coordinate; a ring over that group is as slow as its slowest link, so the group's
// bandwidth is the inter-node one as soon as any two of its devices sit on different
// nodes.
#ifndef SBP_LINK_MODEL_H_
#define SBP_LINK_MODEL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "oneflow_core/placement.h"

namespace oneflow {

struct LinkModel {
  // Bytes per second one device can receive from another device of its node.
  double intra_node_bandwidth = 0;
  // Bytes per second one device can receive from a device of another node.
  double inter_node_bandwidth = 0;
  // Seconds of one message round (alpha) inside a node (the in-process backend's
  // arrival and hand-off) and across nodes (a round of the cross-process transport:
  // send, the peer's receive, its wake-up). A collective pays one per round it runs
  // (sbp/collective_cost.h); 0 prices bandwidth only. `oneflow calibrate` measures both.
  double intra_node_latency = 0;
  double inter_node_latency = 0;
  // Seconds one point-to-point transfer between processes costs beyond its bytes /
  // inter_node_bandwidth: a pipeline's send_recv between stages on different nodes (its
  // two-rank all-to-all: both ranks' arrival, the data, the receiver's wake-up).
  // `oneflow calibrate` measures it by round trips between two processes (the calibration
  // file's "transfer" line, sbp/calibration.h); nullopt: not measured, a transfer then
  // costs inter_node_latency like one collective round (TransferSeconds,
  // sbp/collective_cost.h).
  std::optional<double> inter_node_transfer_latency;
};

// OK when both bandwidths are finite and > 0 and both latencies finite and >= 0;
// INVALID_ARGUMENT naming the bad one:
//   link model: inter_node_bandwidth must be a finite number of bytes/s > 0, got 0
//   link model: intra_node_latency must be a finite number of seconds >= 0, got -1
// (and the transfer latency, when given, finite and >= 0).
absl::Status CheckLinkModel(const LinkModel& links);

// True when some group of devices that differ only in coordinate `axis` of the
// placement's hierarchy spans more than one node. On `cpu{0:0-3, 1:0-3}[2, 4]` axis 0
// crosses nodes and axis 1 does not. Precondition: 0 <= axis < hierarchy rank.
bool AxisCrossesNodes(const Placement& placement, int64_t axis);

// The bandwidth of a collective over hierarchy axis `axis`: inter-node when the axis
// crosses nodes, intra-node otherwise.
double AxisBandwidth(const LinkModel& links, const Placement& placement, int64_t axis);

// How the groups of a hierarchy axis sit on nodes when each is `nodes` > 1 runs of
// `per_node` > 1 devices, one run per node, listed node by node: the shape a two-level
// collective needs (an exchange inside each node, then one across the nodes).
struct NodeBlocks {
  int64_t nodes = 0;
  int64_t per_node = 0;
};

// The NodeBlocks every group of axis `axis` shares, or nullopt when some group is within
// one node, has one device per node, uneven counts per node, or returns to a node it
// left. On `cpu{0:0-1, 1:0-1}[4]` axis 0 is {2 nodes, 2 per node}; on
// `cpu{0:0-1, 1:0-1}[2, 2]` neither axis is. Precondition: 0 <= axis < hierarchy rank.
std::optional<NodeBlocks> AxisNodeBlocks(const Placement& placement, int64_t axis);

// The bandwidth between two devices: intra-node when they share a node.
double PairBandwidth(const LinkModel& links, const DeviceId& a, const DeviceId& b);

}  // namespace oneflow

#endif  // SBP_LINK_MODEL_H_
