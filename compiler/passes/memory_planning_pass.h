#ifndef COMPILER_PASSES_MEMORY_PLANNING_PASS_H_
#define COMPILER_PASSES_MEMORY_PLANNING_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Lays out each device's registers: persistent ones (variables, optimizer state) in a
// persistent block, the others in one arena where registers whose lifetimes (first
// producer to last consumer position in the device's actor order) do not overlap share
// memory, placed largest first at the lowest offset that fits. Records the peak and the
// lower bound (the largest sum of simultaneously live registers), and makes an actor
// whose register reuses memory wait for the last readers of what was there. A view
// (RegisterDef.alias_of) takes no memory: it gets its owner's block and offset, and the
// owner stays live until the view's last reader, who also counts among the readers a
// later writer of those bytes waits for. Kernels that declare scratch
// (OpDefinition::workspace_bytes) get KernelDef.workspace_bytes and the device a
// workspace block the size of the largest (compiler/kernel_workspace.h), counted in the
// peak.
class MemoryPlanningPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "memory_planning"; }
  VerifierChecks Checks() const override { return VerifierChecks{.collective_order = true, .memory = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kPlan, StatePart::kDeviceRegisterCount, StatePart::kGraph, StatePart::kBoxings,
            StatePart::kBuckets};
  }
  StateParts Writes() const override { return {StatePart::kPlan}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_MEMORY_PLANNING_PASS_H_
