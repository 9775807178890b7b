#ifndef COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_
#define COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// With micro-batches (Job.micro_batches = M > 1): puts an `accumulate` op (its mean over
// the M micro-batches of an iteration) between every variable's gradient and the
// optimizer, so the optimizer pass that runs next updates from the accumulated gradient
// and the gradient's boxing runs once per iteration. A gradient whose terms come from
// several placements (a variable read on several pipeline stages: the gpt's tied token
// embedding) gets one `accumulate` per placement, over that placement's terms, and the
// accumulated terms are added once per iteration where the variable lives, so each term
// crosses between stages once per iteration rather than once per micro-batch. Also checks
// the job can be micro-batched: batch_size divisible by M. Without micro-batches it does
// nothing.
class GradientAccumulationPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "gradient_accumulation"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGradients, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_GRADIENT_ACCUMULATION_PASS_H_
