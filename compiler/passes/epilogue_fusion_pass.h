#ifndef COMPILER_PASSES_EPILOGUE_FUSION_PASS_H_
#define COMPILER_PASSES_EPILOGUE_FUSION_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Fuses a matmul with the bias_add that alone reads its output, and with the relu that
// alone reads that sum, into one fused_matmul_bias op (oneflow_core/ops/matmul.cc): the
// GEMM adds the bias and applies max(0, .) to each block of its output while it is in
// cache, where the chain wrote the product, read it back to add the bias, wrote the sum,
// read it back for the relu and wrote again. relu's gradient reads relu's output, which
// the fused op still writes, so backward is unchanged; gelu's reads its input, which
// fusing would stop writing, so gelu is not fused.
//
// It runs after sbp_choice and fuses only where the SBPs already agree: the matmul's
// output as the bias_add reads it (and the sum as the relu reads it), on the same
// placement, so no boxing is lost or moved; a row-parallel matmul whose partial sum is
// reduced before the bias is added stays unfused. Intermediate tensors the user named
// with a hint (SBP, placement, compression, sparse rows), the loss and gradients are never
// fused away. The fused op takes the matmul's name and runs at the position of the last
// op of its chain. CompileOptions::fuse_epilogues = false skips the pass.
class EpilogueFusionPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "epilogue_fusion"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_EPILOGUE_FUSION_PASS_H_
