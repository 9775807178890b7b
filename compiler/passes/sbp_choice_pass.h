#ifndef COMPILER_PASSES_SBP_CHOICE_PASS_H_
#define COMPILER_PASSES_SBP_CHOICE_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Chooses an N-D SBP signature for every op, in topological order. Inputs and variables
// take their hint (default B). For each op every combination of its 1-D signatures over
// the hierarchy axes is a candidate (for ops whose signatures depend on the shapes,
// reshape, also those judged per axis on the slice the outer axes leave:
// OpDefinition::attrs_for_local_shapes); candidates that contradict a hint on an output or
// would box an in-place updated input are dropped; the rest are ranked by the modelled
// seconds of the boxing their inputs would need (LinkModel over the cluster's links),
// then by per-device output elements (a partial output counting double, as it will
// need a reduction), then by candidate order.
class SbpChoicePass : public CompilerPass {
 public:
  absl::string_view name() const override { return "sbp_choice"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kGraph}; }
  StateParts Writes() const override { return {StatePart::kGraph, StatePart::kBoxingCache}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_SBP_CHOICE_PASS_H_
