#ifndef COMPILER_PASSES_RECOMPUTE_PASS_H_
#define COMPILER_PASSES_RECOMPUTE_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Activation recomputation: instead of keeping an activation from forward to backward,
// backward re-runs the forward ops that made it (Megatron-LM's selective and full
// recomputation; docs/memory_and_precision.md).
//
// Which forward ops are re-run (the candidates): with mode full, every op of a block
// (OpDef.block, Graph::BlockScope); with selective, the ops of a block's attention core
// (OpDef.attention_core); a block's own mode (OpDef.block_recompute) wins over
// CompileOptions::recompute, and a tensor's override (TensorDef.recompute,
// Tensor::WithRecompute) wins over both. An op is never a candidate when one of its
// outputs is the loss, is kept by its tensor override, or is read by a forward op of
// another block: such a value (a block's output, the next block's input) lives until the
// later block's backward anyway, and is what full recomputation re-runs from.
//
// For every candidate whose output a backward op reads, the pass adds a copy of it (the
// op "<name>/recompute", OpDef.recompute_of, same type, attributes, SBP signature and
// placement), and of every candidate producing that copy's inputs, recursively; those
// backward ops then read the copies. The copies of a block run together, just before the
// first backward op that reads any of them, in forward order: the originals' outputs die
// at their last forward reader, which memory planning (by register lifetimes) turns into
// a smaller arena. Kernels, inputs and order of summation are those of forward, so the
// losses are bit-identical to no recomputation.
//
// It runs after sbp_choice and epilogue_fusion, so the originals' SBPs and kernels are
// what the copies take, and records per block what it kept and re-ran in
// Job.recompute_blocks (`oneflow inspect` prints them).
class RecomputePass : public CompilerPass {
 public:
  absl::string_view name() const override { return "recompute"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  // Gradients: re-indexing the rewritten job marks the variables' gradients
  // (LogicalTensor::is_gradient) from them; without them every gradient would read as an
  // activation to gradient buckets and compression.
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_RECOMPUTE_PASS_H_
