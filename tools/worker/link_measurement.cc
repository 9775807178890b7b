#include "tools/worker/link_measurement.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "tools/cli/link_calibration.h"
#include "tools/cli/machine_calibration.h"

namespace oneflow::worker {
namespace {

void AddLevel(const std::string& level, const cli::MeasuredLink& measured, proto::LinkMeasurements* out) {
  proto::LinkMeasurement* entry = out->add_levels();
  entry->set_level(level);
  entry->set_latency_seconds(measured.fit.latency_seconds);
  entry->set_bytes_per_second(measured.fit.bytes_per_second);
  entry->set_method(measured.fit.method);
  entry->set_small_seconds(measured.timings.small_seconds);
  entry->set_large_seconds(measured.timings.large_seconds);
}

}  // namespace

absl::StatusOr<proto::LinkMeasurements> MeasureNodeLinks(const NodeLinkOptions& options) {
  if (options.nodes < 2 || options.store == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("measuring the links between nodes needs a job of >= 2 nodes and its rendezvous store; this job "
                     "has ",
                     options.nodes, " node(s)"));
  }
  CrossProcessGroupOptions group;
  // The transport is part of the name, as in the runtime's groups (communicator_pool.cc).
  group.group_name = absl::StrCat("calibrate links/", TransportName(options.transport));
  group.rank = options.node;
  group.size = options.nodes;
  group.store = options.store;
  group.host = options.host;
  group.connect_timeout = options.connect_timeout;
  // The UCX transports in use, when the environment chose them (the daemons' own
  // environment decides; nothing here restricts them).
  const char* ucx_tls = std::getenv("UCX_TLS");
  const std::string method =
      absl::StrCat(TransportName(options.transport), " all_reduce, ", options.nodes, " processes (one per node)",
                   options.transport == Transport::kUcx && ucx_tls != nullptr ? absl::StrCat(", UCX_TLS=", ucx_tls)
                                                                              : std::string(),
                   ", ", cli::kCalibrationSizesText);
  absl::StatusOr<cli::MeasuredLink> inter_node =
      cli::MeasureCrossProcessGroup(options.transport, group, options.repetitions, method);
  if (!inter_node.ok()) {
    return absl::Status(inter_node.status().code(),
                        absl::StrCat("measuring the inter-node link: ", inter_node.status().message()));
  }
  absl::StatusOr<cli::MeasuredLink> intra_node = cli::MeasureInProcessLink(options.repetitions);
  if (!intra_node.ok()) {
    return absl::Status(intra_node.status().code(),
                        absl::StrCat("measuring the intra-node link: ", intra_node.status().message()));
  }
  proto::LinkMeasurements measurements;
  AddLevel("inter_node", *inter_node, &measurements);
  AddLevel("intra_node", *intra_node, &measurements);
  const cli::MachineIdentity identity = cli::ThisMachine();
  measurements.set_boot_id(identity.boot_id);
  measurements.set_cores(identity.cores);
  if (options.node == 0) {
    const cli::MachineLines machine = cli::MeasureMachine();
    for (const std::string& line : machine.codec_lines) measurements.add_codec_lines(line);
    for (const std::string& line : machine.compute_lines) measurements.add_compute_lines(line);
  }
  return measurements;
}

}  // namespace oneflow::worker
