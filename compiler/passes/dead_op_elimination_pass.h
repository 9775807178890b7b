#ifndef COMPILER_PASSES_DEAD_OP_ELIMINATION_PASS_H_
#define COMPILER_PASSES_DEAD_OP_ELIMINATION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Removes ops nothing needs. Gradient functions build the gradient of every input of an
// op, also those no variable needs (the data input of the first matmul, the gradient
// of an embedding's ids path); in a training job everything that neither feeds an
// optimizer update nor the loss is dead. Jobs without an optimizer are left alone:
// every op there may be an output the user wants.
class DeadOpEliminationPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "dead_op_elimination"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_DEAD_OP_ELIMINATION_PASS_H_
