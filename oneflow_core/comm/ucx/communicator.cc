#include "oneflow_core/comm/ucx/communicator.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/gloo/mesh_communicator.h"
#include "oneflow_core/comm/ucx/context.h"
#include "oneflow_core/comm/ucx/exchange.h"
#include "oneflow_core/comm/ucx/mesh.h"
#include "oneflow_core/comm/ucx/settings.h"

namespace oneflow {

absl::StatusOr<std::unique_ptr<Communicator>> NewUcxCommunicator(UcxGroupOptions options) {
  const std::string group = absl::StrCat("ucx group '", options.group_name, "'");
  if (options.group_name.empty()) {
    return absl::InvalidArgumentError(
        "ucx group: group_name is empty; it names the group's keys in the store and must be "
        "unique in the job");
  }
  if (options.size < 1 || options.size > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        group, " of ", options.size, " ranks; a group has 1 to 65535 ranks"));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        group, ": rank ", options.rank, " is outside the group of ", options.size, " ranks"));
  }
  if (options.store == nullptr && options.size > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        group, " of ", options.size, " ranks needs a rendezvous store; store is null"));
  }
  return std::unique_ptr<Communicator>(
      new gloo_backend::MeshCommunicator<ucx_backend::Mesh, ucx_backend::UcxExchange>(
          "ucx", std::move(options)));
}

absl::Status UcxAvailable() {
  // Both contexts: a group may need either (context.h).
  absl::Status status = ucx_backend::SharedContext(ucx_backend::PeerPlacement::kAllOnOtherHosts).status();
  if (status.ok()) status = ucx_backend::SharedContext(ucx_backend::PeerPlacement::kSomeOnThisHost).status();
  return status;
}

std::string UcxSettingsInEffect() {
  return ucx_backend::UcxSettingsText([](const char* name) { return std::getenv(name); });
}

}  // namespace oneflow
