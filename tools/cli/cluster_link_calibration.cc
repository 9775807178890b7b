#include "tools/cli/cluster_link_calibration.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/launcher/all_reduce_plan.h"
#include "tools/cli/link_calibration.h"
#include "tools/launcher/launch_client.h"

namespace oneflow::cli {
namespace {

// The plan's shape: the workers measure 2 ranks in a node (link_calibration.h) and one
// rank per node across nodes; 16 MiB per rank is the larger size they time.
constexpr int64_t kDevicesPerNode = 2;
constexpr int64_t kLargeElements = (int64_t{16} << 20) / 4;

}  // namespace

absl::StatusOr<ClusterLinks> SlowestLinks(const std::map<int64_t, proto::LinkMeasurements>& reports,
                                          int64_t expected_nodes) {
  ClusterLinks links;
  for (const std::string level : {"intra_node", "inter_node"}) {
    const proto::LinkMeasurement* slowest = nullptr;
    int64_t slowest_node = -1;
    for (int64_t node = 0; node < expected_nodes; ++node) {
      const auto report = reports.find(node);
      const proto::LinkMeasurement* found = nullptr;
      if (report != reports.end()) {
        for (const proto::LinkMeasurement& entry : report->second.levels()) {
          if (entry.level() == level) found = &entry;
        }
      }
      if (found == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", node, " reported no ", level, " measurement (does its oneflowd run an older "
                         "oneflow_worker without --measure_links?)"));
      }
      if (slowest == nullptr || found->large_seconds() > slowest->large_seconds()) {
        slowest = found;
        slowest_node = node;
      }
    }
    LinkLevelMeasurement& out = level == "intra_node" ? links.intra_node : links.inter_node;
    out.latency_seconds = slowest->latency_seconds();
    out.bytes_per_second = slowest->bytes_per_second();
    out.method = absl::StrCat(slowest->method(), ", between daemons: node ", slowest_node, " slowest of ",
                              expected_nodes, " nodes");
  }
  // Node 0's machine lines, read by the file's own parser before they go into the file.
  const proto::LinkMeasurements& first = reports.at(0);
  if (first.transfer_round_trip_seconds() > 0) {
    // Fitted again with the file's beta: node 0 fitted it with its own.
    TransferMeasurement transfer =
        FitTransfer(first.transfer_round_trip_seconds(), first.transfer_bytes(), links.inter_node.bytes_per_second);
    transfer.method = first.transfer_method();
    links.inter_node_transfer = std::move(transfer);
  }
  links.machine.codec_lines.assign(first.codec_lines().begin(), first.codec_lines().end());
  links.machine.compute_lines.assign(first.compute_lines().begin(), first.compute_lines().end());
  if (links.machine.codec_lines.empty() || links.machine.compute_lines.empty()) {
    return absl::InvalidArgumentError("node 0 reported no codec or compute measurement");
  }
  const std::string text = absl::StrCat(absl::StrJoin(links.machine.codec_lines, "\n"), "\n",
                                        absl::StrJoin(links.machine.compute_lines, "\n"), "\n");
  if (absl::Status parsed = ParseCalibration(text, "node 0's measurements").status(); !parsed.ok()) {
    return parsed;
  }
  // One boot id everywhere: the nodes are processes of one machine and take turns on its
  // cores (node 0's: the nodes are its processes). A worker that cannot read its boot id
  // reports none, and says nothing about sharing.
  bool one_machine = !first.boot_id().empty();
  for (int64_t node = 1; node < expected_nodes && one_machine; ++node) {
    one_machine = reports.at(node).boot_id() == first.boot_id();
  }
  if (one_machine) {
    links.shared_boot_id = first.boot_id();
    links.shared_machine = SharedMachineMeasurement{
        expected_nodes, std::max<int64_t>(1, first.cores()),
        absl::StrCat("every node's worker read boot id ", first.boot_id(),
                     ": one machine; cores: sched_getaffinity of node 0's worker")};
  }
  return links;
}

absl::StatusOr<ClusterLinks> MeasureClusterLinks(const ClusterCalibrationOptions& options) {
  const int64_t nodes = static_cast<int64_t>(options.nodes.size());
  if (nodes < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nodes lists ", nodes, " daemon; measuring the link between nodes needs at least 2 "
        "(--nodes=HOST:PORT,HOST:PORT,...), or no --nodes to measure this machine alone"));
  }
  launcher::AllReducePlanOptions plan_options;
  plan_options.job_name = "oneflow calibrate";
  plan_options.nodes = nodes;
  plan_options.devices_per_node = kDevicesPerNode;
  plan_options.elements = kLargeElements;
  plan_options.collectives = 1;
  absl::StatusOr<proto::Plan> plan = launcher::AllReducePlan(plan_options);
  if (!plan.ok()) return plan.status();

  launcher::LaunchOptions launch;
  launch.nodes = options.nodes;
  launch.token = options.token;
  launch.tls_ca_file = options.tls_ca_file;
  launch.job_id = absl::StrCat("calibrate-", absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::UTCTimeZone()),
                               "-", absl::ToUnixMicros(absl::Now()) % 1000000);
  launch.iterations = 1;
  launch.transport = options.transport;
  launch.measure_links = true;
  // No heartbeats, no hang watch: the job is a few seconds of collectives.
  launch.monitor.hang_seconds = 0;
  launch.monitor.slow_factor = 0;
  launch.collect_dumps = false;
  std::map<int64_t, proto::LinkMeasurements> reports;
  launch.on_link_measurements = [&reports](int64_t node, const proto::LinkMeasurements& measurements) {
    reports[node] = measurements;
  };
  // The workers' own lines (UCX's warnings, a failure's detail) help when a node fails.
  launch.on_log = [](int64_t node, const std::string& line) {
    std::fprintf(stderr, "node %lld: %s\n", static_cast<long long>(node), line.c_str());
  };
  absl::StatusOr<std::unique_ptr<launcher::LaunchSession>> session =
      launcher::LaunchSession::Create(*std::move(plan), std::move(launch));
  if (!session.ok()) return session.status();
  if (absl::Status status = (*session)->Run(); !status.ok()) return status;
  return SlowestLinks(reports, nodes);
}

}  // namespace oneflow::cli
