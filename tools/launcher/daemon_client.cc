#include "tools/launcher/daemon_client.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/launcher/address.h"
#include "tools/launcher/credentials.h"

namespace oneflow::launcher {

absl::StatusOr<std::vector<DaemonNode>> ConnectToDaemons(const std::vector<std::string>& nodes,
                                                         const std::string& tls_ca_file) {
  if (nodes.empty()) {
    return absl::InvalidArgumentError("--nodes=HOST:PORT,... is required: one oneflowd per node, node 0 first");
  }
  std::vector<DaemonNode> daemons;
  std::set<std::string> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string& entry = nodes[i];
    absl::StatusOr<HostPort> address = ParseHostPort(entry, absl::StrCat("--nodes entry ", i));
    if (!address.ok()) return address.status();
    if (address->port == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nodes entry ", i, " '", entry, "' has port 0; give the port the daemon printed"));
    }
    if (!seen.insert(entry).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nodes lists ", entry, " twice; every node needs its own daemon"));
    }
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(entry, tls_ca_file);
    if (!channel.ok()) return channel.status();
    DaemonNode& daemon = daemons.emplace_back();
    daemon.rank = static_cast<int64_t>(i);
    daemon.address = entry;
    daemon.host = address->host;
    daemon.stub = proto::Launcher::NewStub(*channel);
  }
  return daemons;
}

std::string NodeName(int64_t rank, absl::string_view address) {
  return absl::StrCat("node ", rank, " (", address, ")");
}

std::string DescribeFailedCall(int64_t rank, absl::string_view address, const grpc::Status& status,
                               absl::string_view what) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::StrCat(NodeName(rank, address), " is unreachable: ", status.error_message());
  }
  return absl::StrCat(NodeName(rank, address), " refused ", what, ": ", status.error_message());
}

std::string DeviceProgressText(const proto::DeviceProgress& device, const proto::Plan* plan) {
  std::string text = absl::StrCat("device ", device.device());
  if (plan != nullptr && device.device() >= 0 && device.device() < plan->devices_size()) {
    const proto::DeviceId& id = plan->devices(static_cast<int>(device.device())).device();
    absl::StrAppend(&text, " (", id.node(), ":", id.device(), ")");
  }
  const std::string last =
      device.completed_collectives() > 0 ? absl::StrCat(device.completed_collectives() - 1) : std::string("none");
  absl::StrAppend(&text, ": last completed collective ", last, " (", device.completed_iterations(),
                  device.completed_iterations() == 1 ? " iteration)" : " iterations)");
  return text;
}

std::string JobStateName(proto::JobStatus::State state) {
  switch (state) {
    case proto::JobStatus::PENDING:
      return "pending";
    case proto::JobStatus::RUNNING:
      return "running";
    case proto::JobStatus::FINISHED:
      return "finished";
    case proto::JobStatus::FAILED:
      return "failed";
    case proto::JobStatus::CANCELLED:
      return "cancelled";
    default:
      return absl::StrCat("state ", static_cast<int>(state));
  }
}

}  // namespace oneflow::launcher
