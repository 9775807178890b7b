// The transports a group of processes can run over, by the name `--transport=` takes
// (tools/cli/launch_command.h, tools/worker), and the one place that makes a cross-process
// communicator of the chosen one. The default, UCX, beat Gloo at 4 KiB and from 16 MiB
// up in every run of bench/collectives:cross_process_bench (docs/collectives.md).
//
//   absl::StatusOr<Transport> transport = ParseTransport(flag);  // "ucx" or "gloo"
//   NewCrossProcessCommunicator(*transport, group_options);
#ifndef ONEFLOW_CORE_COMM_TRANSPORT_H_
#define ONEFLOW_CORE_COMM_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/transport_name.h"

namespace oneflow {

// OK when this process can run `transport`; UNAVAILABLE with the reason otherwise (UCX's
// library failing to initialize).
absl::Status TransportAvailable(Transport transport);

// The settings `transport` runs with in this process, for a run's metrics: UCX's chosen
// and overridden configuration (ucx/communicator.h, UcxSettingsInEffect); empty for Gloo,
// which has none of its own.
std::string TransportSettings(Transport transport);

struct CrossProcessGroupOptions {
  std::string group_name;  // the same on every rank; unique in the job
  int64_t rank = 0;
  int64_t size = 1;
  KeyValueStore* store = nullptr;  // not owned; must outlive the communicator
  // This node's address its peers can reach (Gloo binds to it; UCX picks its interfaces).
  std::string host = "127.0.0.1";
  absl::Duration connect_timeout = absl::Seconds(60);
};

// A communicator of `transport` for rank `options.rank` of a group of processes.
absl::StatusOr<std::unique_ptr<Communicator>> NewCrossProcessCommunicator(
    Transport transport, const CrossProcessGroupOptions& options);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_TRANSPORT_H_
