#ifndef COMPILER_PASSES_BOXING_INSERTION_PASS_H_
#define COMPILER_PASSES_BOXING_INSERTION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Inserts a boxing on every edge whose producer's SBP or placement differs from what the
// consumer's signature needs (and before the loss sink, which needs B), planned by
// sbp/PlanBoxing. Consumers needing the same layout of a tensor share one boxing.
class BoxingInsertionPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "boxing_insertion"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true, .boxings = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kBoxingCache}; }
  StateParts Writes() const override {
    return {StatePart::kGraph, StatePart::kBoxings, StatePart::kBoxingCache};
  }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_BOXING_INSERTION_PASS_H_
