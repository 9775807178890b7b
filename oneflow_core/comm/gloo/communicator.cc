#include "oneflow_core/comm/gloo/communicator.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/gloo/gloo_exchange.h"
#include "oneflow_core/comm/gloo/mesh.h"
#include "oneflow_core/comm/gloo/mesh_communicator.h"

namespace oneflow {

absl::StatusOr<std::unique_ptr<Communicator>> NewGlooCommunicator(GlooGroupOptions options) {
  const std::string group = absl::StrCat("gloo group '", options.group_name, "'");
  if (options.group_name.empty()) {
    return absl::InvalidArgumentError(
        "gloo group: group_name is empty; it names the group's keys in the store and must be "
        "unique in the job");
  }
  if (options.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(group, " of ", options.size, " ranks; a group needs >= 1"));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        group, ": rank ", options.rank, " is outside the group of ", options.size, " ranks"));
  }
  if (options.store == nullptr && options.size > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        group, " of ", options.size, " ranks needs a rendezvous store; store is null"));
  }
  if (options.host.empty()) options.host = "127.0.0.1";
  return std::unique_ptr<Communicator>(new gloo_backend::MeshCommunicator<gloo_backend::Mesh, gloo_backend::GlooExchange>(
      "gloo", std::move(options)));
}

}  // namespace oneflow
