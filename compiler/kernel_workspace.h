// The scratch memory kernels declare (OpDefinition::workspace_bytes), for memory
// planning: each compute actor's KernelDef.workspace_bytes from the shapes of the
// registers it reads on its device, and the largest per device, which the device's
// workspace block (MemoryBlock.workspace) must hold.
//
// One block per device rather than bytes in the arena: a device's compute acts run one at
// a time on its compute thread, so one buffer the size of the largest serves them all,
// needs no slot copies and no reuse waits, and adds exactly that size to the planned peak.
#ifndef COMPILER_KERNEL_WORKSPACE_H_
#define COMPILER_KERNEL_WORKSPACE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "compiler/compilation.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/op_definition.h"
#include "proto/plan.pb.h"

namespace oneflow {

class KernelWorkspaces {
 public:
  // The ops of `graph` whose definitions declare a workspace, with their attributes.
  // Errors: an attribute that does not convert (names the op).
  static absl::StatusOr<KernelWorkspaces> Of(const LogicalGraph& graph);

  // Sets KernelDef.workspace_bytes of every compute actor of `device` whose op declares a
  // workspace (0 stays unset) and returns the largest (0: none on the device). Errors: a
  // kernel input without a register, a register dtype the runtime does not know.
  absl::StatusOr<int64_t> Assign(proto::DevicePlan* device) const;

 private:
  struct Op {
    const OpDefinition* definition = nullptr;
    AttrMap attrs;
  };
  absl::flat_hash_map<std::string, Op> ops_;  // By op name.
};

}  // namespace oneflow

#endif  // COMPILER_KERNEL_WORKSPACE_H_
