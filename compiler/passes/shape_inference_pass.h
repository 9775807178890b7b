#ifndef COMPILER_PASSES_SHAPE_INFERENCE_PASS_H_
#define COMPILER_PASSES_SHAPE_INFERENCE_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Validates the job: re-runs every op's shape/dtype inference through the DSL and
// compares with the recorded types, checks placement and SBP hints against the cluster
// and the shapes, and indexes the logical graph. Never changes the job.
class ShapeInferencePass : public CompilerPass {
 public:
  absl::string_view name() const override { return "shape_inference"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob}; }
  StateParts Writes() const override { return {StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_SHAPE_INFERENCE_PASS_H_
