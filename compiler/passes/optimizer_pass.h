#ifndef COMPILER_PASSES_OPTIMIZER_PASS_H_
#define COMPILER_PASSES_OPTIMIZER_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Adds one update op per (variable, gradient) pair (sgd_update or adamw_update) and the
// optimizer-state variables it needs (momentum; AdamW's m and v), zero-initialized and
// laid out exactly like their parameter (same placement and SBP hint).
class OptimizerPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "optimizer"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_OPTIMIZER_PASS_H_
