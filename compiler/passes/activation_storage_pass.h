#ifndef COMPILER_PASSES_ACTIVATION_STORAGE_PASS_H_
#define COMPILER_PASSES_ACTIVATION_STORAGE_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// bf16 activation storage (CompileOptions::precision bf16; docs/memory_and_precision.md):
// an activation that backward reads is kept from forward to backward in bf16, half the
// bytes of f32, and widened back to f32 just before backward reads it.
//
// For every stored activation t (below) the pass adds two `cast` ops:
//   "<t>/bf16" = cast(t, dtype=bf16), right after t's last forward reader (its producer
//       when forward does not read it), so the f32 t dies there;
//   "<t>/f32"  = cast("<t>/bf16", dtype=f32), right before t's first backward reader;
// and those backward readers read "<t>/f32". Both casts take t's placement and SBP, so no
// boxing ever moves a bf16 tensor: a backward reader that wants another SBP boxes the f32
// "<t>/f32" exactly as it boxed t before. Lowering keeps the job's order on every device
// and memory planning lays registers out by lifetime, so the f32 register of t now spans
// forward only and the bf16 one (2 bytes an element) spans forward to backward: the arena
// shrinks with no change to memory planning.
//
// Stored: every f32 output of a forward op (one the loss depends on; compilation.h,
// ForwardOps) that a backward op on its own placement reads, except the loss and tensors
// partial (P) on some hierarchy axis (rounding a partial sum is not rounding the sum; such
// values are boxed before use anyway). Backward readers on other placements (pipeline
// stages) keep reading t, so stages exchange exactly what they did. Forward values,
// variables (fp32 masters), gradients and optimizer state are untouched; backward computes
// in fp32 from values rounded once to bf16 (round to nearest even), as mixed-precision
// training keeps bf16 activations.
//
// It runs after recompute (a re-run value is made in backward and needs no storage; a
// block input that full recomputation re-runs from is stored like any other) and before
// boxing_insertion. With fp32 it changes nothing.
class ActivationStoragePass : public CompilerPass {
 public:
  absl::string_view name() const override { return "activation_storage"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  // Gradients: re-indexing the rewritten job marks the variables' gradients
  // (LogicalTensor::is_gradient) from them; without them every gradient would read as an
  // activation to gradient buckets and compression.
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kGradients}; }
  StateParts Writes() const override { return {StatePart::kJob, StatePart::kGraph}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASSES_ACTIVATION_STORAGE_PASS_H_
