#ifndef COMPILER_PASSES_LOWERING_PASS_H_
#define COMPILER_PASSES_LOWERING_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Lowers the logical graph to one program per device: data sources, variables, one
// physical op per logical op, the steps of every boxing and the loss sink, each with its
// physical (per-device) shapes, in one topological order shared by all devices.
class LoweringPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "lowering"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override {
    return {StatePart::kJob, StatePart::kGraph, StatePart::kBoxings, StatePart::kBuckets};
  }
  StateParts Writes() const override { return {StatePart::kDevices}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_LOWERING_PASS_H_
