#ifndef COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_
#define COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// With micro-batches (Job.micro_batches = M > 1): puts an `accumulate` op (its mean over
// the M micro-batches of an iteration) between every variable's gradient and the
// optimizer, so the optimizer pass that runs next updates from the accumulated gradient
// and the gradient's boxing runs once per iteration. Also checks the job can be
// micro-batched: batch_size divisible by M. Without micro-batches it does nothing.
class GradientAccumulationPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "gradient_accumulation"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGradients, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_
