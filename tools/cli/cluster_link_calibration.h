// `oneflow calibrate --nodes=HOST:PORT,...`: alpha and beta of both link levels measured
// between the daemons of a cluster, by a short job launched on them like `oneflow launch`
// (the same token, TLS, rendezvous and transport agreement). Its plan is an all-reduce
// plan of nodes x 2 devices (tools/launcher/all_reduce_plan.h) and its workers run with
// RunOptions.measure_links: instead of the plan, each measures its node's intra-node level
// and, all together, the inter-node level over the job's transport
// (tools/worker/link_measurement.h), and reports them.
//
// Per level the file gets the slowest node's fit (the one whose 16 MiB all-reduce took
// longest): a collective over nodes runs at the pace of its slowest member. Its "method"
// names the node and how many reported. The transfer line is node 0's (it and node 1
// measured it, link_calibration.h), fitted with the file's inter_node beta. Node 0's worker also measures its machine's codecs
// and compute rates (machine_calibration.h), the file's other lines. Every worker reports
// its machine's boot id and cores: when all of them report one boot id, the nodes are
// processes on one machine (emulated hosts) and the file gets a "machine" line with node
// 0's cores, which the cost model prices as cores the nodes' devices share.
#ifndef TOOLS_CLI_CLUSTER_LINK_CALIBRATION_H_
#define TOOLS_CLI_CLUSTER_LINK_CALIBRATION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/launcher.pb.h"
#include "sbp/calibration.h"
#include "tools/cli/machine_calibration.h"

namespace oneflow::cli {

struct ClusterLinks {
  LinkLevelMeasurement intra_node;
  LinkLevelMeasurement inter_node;
  // With --nodes: node 0's codec and compute lines.
  MachineLines machine;
  // With --nodes, when every node reported the same (non-empty) boot id: that id.
  std::optional<SharedMachineMeasurement> shared_machine;
  std::string shared_boot_id;
  // A transfer between two processes (link_calibration.h): node 0's report with --nodes
  // (none from a worker that predates it).
  std::optional<TransferMeasurement> inter_node_transfer;
};

struct ClusterCalibrationOptions {
  // The daemons, node 0 first (>= 2), their token and TLS CA (empty: plaintext).
  std::vector<std::string> nodes;
  std::string token;
  std::string tls_ca_file;
  // "ucx", "gloo"; empty: the workers' default.
  std::string transport;
};

// Runs the measurement job. INVALID_ARGUMENT for fewer than 2 nodes (naming --nodes);
// the launch's errors as `oneflow launch` words them (a node unreachable or refusing the
// token, a worker failing), e.g.
//   job 'calibrate-...' failed: node 1 (127.0.0.1:1) is unreachable: ...
absl::StatusOr<ClusterLinks> MeasureClusterLinks(const ClusterCalibrationOptions& options);

// The slowest node's fit per level among every node's report (node -> measurements),
// node 0's machine lines, and the shared machine when every node reported one boot id. INVALID_ARGUMENT naming the first of `expected_nodes` nodes whose
// report lacks a level, or node 0's lines when they are missing or do not parse.
absl::StatusOr<ClusterLinks> SlowestLinks(const std::map<int64_t, proto::LinkMeasurements>& reports,
                                          int64_t expected_nodes);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_CLUSTER_LINK_CALIBRATION_H_
