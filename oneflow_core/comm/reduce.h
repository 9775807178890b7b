// Elementwise reduction of several float buffers into one: the arithmetic of AllReduce
// and ReduceScatter, shared by every backend that reduces on the CPU.
#ifndef ONEFLOW_CORE_COMM_REDUCE_H_
#define ONEFLOW_CORE_COMM_REDUCE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "oneflow_core/sbp.h"

namespace oneflow {

// output[i] = (((inputs[0][i] op inputs[1][i]) op inputs[2][i]) ...) for i in [0, count).
// The fixed left-to-right order makes the result bit-identical to a sequential loop over
// ranks, whichever rank computes it. `output` may be one of the inputs: the work goes
// block by block through an accumulator small enough to stay in L1, so every input
// element is read before its output element is written. Preconditions: at least one
// input; each input and the output hold `count` elements.
void ReduceFloats(ReduceOp op, absl::Span<const float* const> inputs, float* output, int64_t count);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_REDUCE_H_
