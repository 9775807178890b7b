#include "oneflow_core/comm/transport.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/ucx/communicator.h"

namespace oneflow {

absl::Status TransportAvailable(Transport transport) {
  if (transport == Transport::kUcx) return UcxAvailable();
  return absl::OkStatus();  // Gloo's TCP needs nothing beyond the library this binary links
}

std::string TransportSettings(Transport transport) {
  return transport == Transport::kUcx ? UcxSettingsInEffect() : std::string();
}

absl::StatusOr<std::unique_ptr<Communicator>> NewCrossProcessCommunicator(
    Transport transport, const CrossProcessGroupOptions& options) {
  if (transport == Transport::kGloo) {
    GlooGroupOptions gloo;
    gloo.group_name = options.group_name;
    gloo.rank = options.rank;
    gloo.size = options.size;
    gloo.store = options.store;
    gloo.host = options.host;
    gloo.connect_timeout = options.connect_timeout;
    return NewGlooCommunicator(std::move(gloo));
  }
  UcxGroupOptions ucx;
  ucx.group_name = options.group_name;
  ucx.rank = options.rank;
  ucx.size = options.size;
  ucx.store = options.store;
  ucx.connect_timeout = options.connect_timeout;
  return NewUcxCommunicator(std::move(ucx));
}

}  // namespace oneflow
