// Elementwise reduction of several float buffers into one: the arithmetic of AllReduce
// and ReduceScatter, shared by every backend that reduces on the CPU.
#ifndef ONEFLOW_CORE_COMM_REDUCE_H_
#define ONEFLOW_CORE_COMM_REDUCE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "oneflow_core/sbp.h"

namespace oneflow {

// How a reduction writes its result.
enum class ReduceStores {
  // Through the caches: the result is read again soon (it fits in them).
  kCached,
  // Around the caches (AVX non-temporal stores; plain stores in a build without AVX):
  // for results much larger than the last-level cache. A cached store first reads each
  // line it overwrites and evicts data that is still wanted; a streaming one does
  // neither, which takes a third of the memory traffic off the 2-rank all-reduce (two
  // inputs read, two outputs written). The function orders these stores before it
  // returns (a fence), so a release that follows publishes them as it would plain stores.
  kStreaming,
};

// output[i] = (((inputs[0][i] op inputs[1][i]) op inputs[2][i]) ...) for i in [0, count).
// The fixed left-to-right order makes the result bit-identical to a sequential loop over
// ranks, whichever rank computes it. `output` may be one of the inputs: every input
// element is read before the output element at the same index is written. Preconditions:
// at least one input; each input and the output hold `count` elements.
void ReduceFloats(ReduceOp op, absl::Span<const float* const> inputs, float* output, int64_t count);

// The same, computed once and written into every buffer of `outputs` (the in-process
// all-reduce: the rank that owns a chunk writes its sum into every rank's output). Each
// output may be one of the inputs, at the same index; outputs are distinct.
// Preconditions: at least one input and one output, each of `count` elements.
void ReduceFloatsToAll(ReduceOp op, absl::Span<const float* const> inputs,
                       absl::Span<float* const> outputs, int64_t count, ReduceStores stores);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_REDUCE_H_
