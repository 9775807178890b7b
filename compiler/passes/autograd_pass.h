#ifndef COMPILER_PASSES_AUTOGRAD_PASS_H_
#define COMPILER_PASSES_AUTOGRAD_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Adds the backward graph: for a job with a loss and an optimizer, the gradient of the
// loss with respect to every trainable variable, built from each op's gradient written
// in the DSL (oneflow_core/dsl/gradients). Records (variable, gradient) pairs.
class AutogradPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "autograd"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGradients, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_AUTOGRAD_PASS_H_
