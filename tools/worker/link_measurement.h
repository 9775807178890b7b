// `oneflow calibrate --nodes` on one node (RunOptions.measure_links, the worker's
// --measure_links): instead of running the plan's iterations, the worker measures the two
// levels of the link model (sbp/link_model.h) where the job's devices really run:
//
//   intra_node  2 threads of this worker over the in-process backend, as the devices of
//               one node talk (tools/cli/link_calibration.h, MeasureInProcessLink);
//   inter_node  one rank per node of the job over the job's transport (--transport), bound
//               to this node's --worker_host, the ranks meeting through the job's
//               rendezvous store like the runtime's own cross-node groups
//               (MeasureCrossProcessGroup). Every node's worker takes part.
//
// All-reduces of 64 B and 16 MiB per rank, fitted to the cost model's formulas. The
// inter-node group runs first, while every node's worker is in step; each node then
// measures its own intra-node level, and node 0 its machine's codecs and compute rates
// (tools/cli/machine_calibration.h: the calibration file's other lines). The launch client (tools/cli/calibrate_command.cc)
// collects every node's measurements and writes the calibration file.
#ifndef TOOLS_WORKER_LINK_MEASUREMENT_H_
#define TOOLS_WORKER_LINK_MEASUREMENT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/transport.h"
#include "proto/launcher.pb.h"

namespace oneflow::worker {

struct NodeLinkOptions {
  int64_t node = 0;
  int64_t nodes = 1;  // >= 2: the inter-node level needs two nodes
  Transport transport = kDefaultTransport;
  std::string host = "127.0.0.1";
  KeyValueStore* store = nullptr;  // the job's rendezvous store; not owned
  absl::Duration connect_timeout = absl::Seconds(60);
  // Timed calls per size after one warm-up.
  int64_t repetitions = 21;
};

// Both levels as this node measured them (levels "inter_node", then "intra_node"; on node
// 0 also the codec and compute lines). The
// collectives' errors (a peer that never joined: the connect timeout's error).
absl::StatusOr<proto::LinkMeasurements> MeasureNodeLinks(const NodeLinkOptions& options);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_LINK_MEASUREMENT_H_
