#ifndef COMPILER_PASSES_PRECISION_PASS_H_
#define COMPILER_PASSES_PRECISION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// bf16 mixed precision (CompileOptions::precision, compiler/precision.h): every matmul and
// fused_matmul_bias op on f32 operands, forward and backward (autograd has run), gets the
// attribute compute_dtype="bf16". Its kernel then rounds both operands to bf16 (weights
// are cast from their fp32 masters at each use) and multiplies them through oneDNN's bf16
// matmul primitive with fp32 accumulation and an fp32 output (kernels/cpu/matmul.cc).
//
// Nothing else changes: tensors keep their f32 dtype, so master weights, gradients,
// optimizer state, norm statistics, softmax and the loss stay fp32, and so do the bytes
// memory planning sees (activations are not stored in bf16 by this pass). Every kernel
// that computes in bf16 is thus an explicit, attributed op in the plan.
//
// It runs after epilogue_fusion (so fused products are marked) and before recompute (whose
// copies take their original's attributes). With fp32 it changes nothing.
class PrecisionPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "precision"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph}; }
  StateParts Writes() const override { return {StatePart::kJob}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_PRECISION_PASS_H_
