#include "compiler/kernel_workspace.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<KernelWorkspaces> KernelWorkspaces::Of(const LogicalGraph& graph) {
  KernelWorkspaces workspaces;
  for (const LogicalOp& op : graph.ops) {
    if (op.definition == nullptr || !op.definition->workspace_bytes) continue;
    Op& entry = workspaces.ops_[op.name];
    entry.definition = op.definition;
    if (op.def == nullptr) continue;
    for (const auto& [key, value] : op.def->attrs()) {
      absl::StatusOr<AttrValue> converted = AttrFromProto(value);
      if (!converted.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", op.name, "' attribute '", key, "': ", converted.status().message()));
      }
      entry.attrs[key] = *std::move(converted);
    }
  }
  return workspaces;
}

absl::StatusOr<int64_t> KernelWorkspaces::Assign(proto::DevicePlan* device) const {
  int64_t largest = 0;
  if (ops_.empty()) return largest;
  for (proto::ActorDef& actor : *device->mutable_actors()) {
    if (actor.kind() != proto::ACTOR_COMPUTE || actor.kernels_size() == 0) continue;
    proto::KernelDef& kernel = *actor.mutable_kernels(0);
    auto it = ops_.find(kernel.op_name());
    if (it == ops_.end()) continue;
    // The kernel's inputs as the device holds them: its registers' shapes.
    std::vector<TensorType> local;
    for (const std::string& argument : it->second.definition->inputs) {
      auto input = kernel.inputs().find(argument);
      if (input == kernel.inputs().end() || input->second < 0 || input->second >= device->registers_size()) {
        return absl::InternalError(absl::StrCat("actor ", actor.id(), " of op '", kernel.op_name(),
                                                "' has no register for input '", argument, "'"));
      }
      const proto::RegisterDef& reg = device->registers(static_cast<int>(input->second));
      OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(reg.dtype()));
      local.push_back({Shape(std::vector<int64_t>(reg.shape().begin(), reg.shape().end())), dtype});
    }
    const int64_t bytes = it->second.definition->workspace_bytes(local, it->second.attrs);
    if (bytes > 0) kernel.set_workspace_bytes(bytes);
    largest = std::max(largest, bytes);
  }
  return largest;
}

}  // namespace oneflow
