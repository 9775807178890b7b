#ifndef COMPILER_PASSES_OPTIMIZER_PASS_H_
#define COMPILER_PASSES_OPTIMIZER_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Adds one update op per (variable, gradient) pair (sgd_update or adamw_update) and the
// optimizer-state variables it needs (momentum; AdamW's m and v), zero-initialized and
// laid out exactly like their parameter (same placement and SBP hint).
//
// With OptimizerDef.zero_stage (docs/zero.md) it shards over hierarchy axis zero_axis,
// with SBP hints and ordinary ops only (the runtime sees nothing new):
//   stage 3: the parameter is hinted split there (S(k) on that axis, k its first tensor
//     axis no other hierarchy axis splits); its state follows it and the update runs in
//     place on the shards. Its readers read "<variable>/gathered" instead, an identity
//     hinted with the old layout, which the compiler reaches by an all-gather.
//   stages 1 and 2: the parameter stays as it was; only the state is split, and the
//     update runs out of place on the shard (sgd_step / adamw_step), followed by
//     `assign`s into the state and, through an all-gather, into the parameter. Stage 1
//     first passes the gradient through an identity hinted like the parameter, so it is
//     all-reduced and then sliced; stage 2 lets the partial gradient be reduce-scattered.
// Variables that cannot be split (a scalar, dims smaller than the axis) keep the plain
// update. Every adamw op, in place or out of place, carries the AdamWOptimizer's
// attributes, variance_frozen_from among them (set only when > 0; negative is refused).
class OptimizerPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "optimizer"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_OPTIMIZER_PASS_H_
