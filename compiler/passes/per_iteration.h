// With micro-batches, which values of the logical graph exist once per iteration and
// which once per micro-batch. The actor graph marks the actors of per-iteration values
// (they act once an iteration); the SBP search counts an op's seconds as many times as
// it acts in an iteration.
#ifndef COMPILER_PASSES_PER_ITERATION_H_
#define COMPILER_PASSES_PER_ITERATION_H_

#include <cstdint>
#include <vector>

#include "compiler/compilation.h"

namespace oneflow {

// Which tensors hold one value per iteration rather than one per micro-batch: variables,
// the accumulator's output, and every op output computed only from such tensors.
// Data-source inputs and everything computed from them are per micro-batch. Empty
// without micro-batches (every actor then acts once per iteration). `derived` marks
// tensors computed from the accumulator's output (per-iteration values that exist only
// after the iteration's micro-batches).
std::vector<bool> PerIterationTensors(const Compilation& compilation, std::vector<bool>* derived);

// Whether op `op` acts once per iteration: all its inputs are per iteration (the
// accumulator reads one value per micro-batch, so it is not). False when
// `per_iteration` is empty (no micro-batches).
bool OpPerIteration(const LogicalOp& op, const std::vector<bool>& per_iteration);

}  // namespace oneflow

#endif  // COMPILER_PASSES_PER_ITERATION_H_
