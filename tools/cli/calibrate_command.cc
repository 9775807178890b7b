#include "tools/cli/calibrate_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "oneflow_core/files/atomic_write.h"
#include "oneflow_core/status.h"
#include "sbp/calibration.h"
#include "tools/cli/cluster_link_calibration.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/host_calibration.h"
#include "tools/cli/link_calibration.h"
#include "tools/cli/machine_calibration.h"
#include "tools/cli/shared_machine_turns.h"

ABSL_DECLARE_FLAG(std::string, transport);

ABSL_FLAG(std::string, out, "",
          "Write the measurements (JSON lines) to this file, atomically, instead of stdout.");
ABSL_FLAG(std::string, host_devices, "4,8",
          "Device counts, comma-separated, for which to measure the runtime's in-process costs (per act, per "
          "collective call, the cores the devices share) as the file's host lines, which --auto_parallel prices "
          "with; empty: none. Not with --nodes.");

namespace oneflow::cli {
namespace {

// Link calls are short (a 4 KiB all-reduce is microseconds to a millisecond): more of
// them make the median steadier on a loaded machine.
constexpr int64_t kLinkRepetitions = 21;

// Both levels on this machine alone: the in-process backend and 2 processes over TCP.
absl::StatusOr<ClusterLinks> MeasureLocalLinks() {
  // The cross-process link first: it forks, and a fork is simplest before this process
  // has started any thread.
  absl::StatusOr<CrossProcessMeasurement> inter_node = MeasureCrossProcessLink(kLinkRepetitions);
  if (!inter_node.ok()) {
    return absl::Status(inter_node.status().code(),
                        absl::StrCat("measuring the cross-process link: ", inter_node.status().message()));
  }
  absl::StatusOr<MeasuredLink> intra_node = MeasureInProcessLink(kLinkRepetitions);
  if (!intra_node.ok()) {
    return absl::Status(intra_node.status().code(),
                        absl::StrCat("measuring the in-process link: ", intra_node.status().message()));
  }
  ClusterLinks links{intra_node->fit, inter_node->link.fit, {}};
  links.inter_node_transfer = inter_node->transfer;
  return links;
}

// With --nodes: both levels between the daemons of the cluster (cluster_link_calibration.h).
absl::StatusOr<ClusterLinks> MeasureLinksBetweenDaemons() {
  absl::StatusOr<DaemonFlags> daemons = ReadDaemonFlags();
  if (!daemons.ok()) return daemons.status();
  ClusterCalibrationOptions options;
  options.nodes = daemons->nodes;
  options.token = daemons->token;
  options.tls_ca_file = daemons->tls_ca_file;
  // LaunchSession::Create refuses an unknown one, listing the valid ones.
  options.transport = absl::GetFlag(FLAGS_transport);
  return MeasureClusterLinks(options);
}

// --host_devices as device counts, each >= 1 and given once.
absl::StatusOr<std::vector<int64_t>> HostDeviceCounts() {
  const std::string text = absl::GetFlag(FLAGS_host_devices);
  std::vector<int64_t> counts;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t count = 0;
    if (!absl::SimpleAtoi(part, &count) || count < 1 || count > 4096) {
      return absl::InvalidArgumentError(absl::StrCat("--host_devices=", text, ": '", part,
                                                     "' is not a device count (1..4096)"));
    }
    if (std::find(counts.begin(), counts.end(), count) != counts.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--host_devices=", text, ": ", count, " is given twice"));
    }
    counts.push_back(count);
  }
  return counts;
}

// One host line per count of --host_devices, measured in this process (tools/cli/host_calibration.h).
absl::StatusOr<std::vector<std::string>> MeasureHostLines(const std::vector<int64_t>& counts) {
  std::vector<std::string> lines;
  for (int64_t devices : counts) {
    absl::StatusOr<HostRuntime> runtime = MeasureHostRuntime(devices);
    if (!runtime.ok()) {
      return absl::Status(runtime.status().code(), absl::StrCat("measuring the runtime's costs for ", devices,
                                                                " devices: ", runtime.status().message()));
    }
    lines.push_back(HostMeasurementLine(runtime->measurement));
  }
  return lines;
}

absl::Status RunCalibrate(const std::vector<std::string>& /*arguments*/, std::ostream& out) {
  OF_ASSIGN_OR_RETURN(std::vector<int64_t> host_devices, HostDeviceCounts());
  const absl::CommandLineFlag* host_flag = absl::FindCommandLineFlag("host_devices");
  const bool host_devices_given = host_flag != nullptr && host_flag->CurrentValue() != host_flag->DefaultValue();
  if (!absl::GetFlag(FLAGS_nodes).empty()) {
    // The host lines describe every device as a thread of one process on this machine,
    // which a cluster of daemons is not.
    if (host_devices_given && !host_devices.empty()) {
      return absl::InvalidArgumentError(
          "--host_devices measures devices simulated in one process on this machine; with --nodes the cluster's "
          "devices run on their own nodes: drop --host_devices or --nodes");
    }
    host_devices.clear();
  }
  absl::StatusOr<ClusterLinks> links =
      absl::GetFlag(FLAGS_nodes).empty() ? MeasureLocalLinks() : MeasureLinksBetweenDaemons();
  if (!links.ok()) return links.status();
  // Codecs and compute rates: node 0's worker measured them with --nodes, this machine without.
  const MachineLines machine = absl::GetFlag(FLAGS_nodes).empty() ? MeasureMachine() : links->machine;
  std::vector<std::string> lines = machine.codec_lines;
  lines.push_back(LinkMeasurementLine("intra_node", links->intra_node));
  lines.push_back(LinkMeasurementLine("inter_node", links->inter_node));
  if (links->inter_node_transfer.has_value()) lines.push_back(TransferMeasurementLine(*links->inter_node_transfer));
  lines.insert(lines.end(), machine.compute_lines.begin(), machine.compute_lines.end());
  if (links->shared_machine.has_value()) {
    // More nodes than cores take turns on them: what that costs, measured here when this
    // is their machine (shared_machine_turns.h).
    OF_RETURN_IF_ERROR(AddSharedMachineTurns(links->shared_boot_id, &*links->shared_machine));
    lines.push_back(SharedMachineLine(*links->shared_machine));
  }
  OF_ASSIGN_OR_RETURN(const std::vector<std::string> host_lines, MeasureHostLines(host_devices));
  lines.insert(lines.end(), host_lines.begin(), host_lines.end());
  const std::string path = absl::GetFlag(FLAGS_out);
  if (!path.empty()) return WriteCalibrationFile(path, lines);
  for (const std::string& line : lines) out << line << "\n";
  out.flush();
  if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteCalibrationFile(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
  const absl::Status written = WriteFileAtomically(path, text, WriteFileOptions{absl::StrCat("--out='", path, "'")});
  // A place the user named that cannot be written is a usage error (exit 2), whatever errno said.
  if (!written.ok()) return absl::InvalidArgumentError(written.message());
  return absl::OkStatus();
}

Subcommand CalibrateSubcommand() {
  Subcommand command;
  command.name = "calibrate";
  command.arguments = "";
  command.flag_usage =
      "[--out=FILE] [--host_devices=N,...] [--nodes=HOST:PORT,... --token_file=F [--tls_ca=F] [--transport=ucx|gloo]]";
  command.summary =
      "measure the links (alpha, beta) of this machine or, with --nodes, between a cluster's daemons, and this "
      "machine's codecs and compute rates and, without --nodes, the runtime's in-process costs, for the cost model "
      "(for --codec_calibration=FILE)";
  command.flags = {"out", "host_devices", "nodes", "token_file", "tls_ca", "transport"};
  command.flag_help = {
      {"nodes",
       "HOST:PORT of each node's oneflowd, comma-separated, node 0 first (at least 2): measure the links within "
       "and between these nodes by a short job on them; without it, this machine alone"},
      {"transport", "the transport of the measured groups across nodes: ucx (default) or gloo"},
  };
  command.min_arguments = 0;
  command.max_arguments = 0;
  command.run = &RunCalibrate;
  return command;
}

}  // namespace oneflow::cli
