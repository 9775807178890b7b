// The cost model's memory: what one device of a layout holds at its peak, as memory
// planning (compiler/passes/memory_planning_pass.cc) will allocate it. A sum of terms per
// unit (or per stage: every term is linear in the unit's bytes but the two "largest"),
// so the cut search (stage_cuts.h) can add units up:
//
//   parameters        whole; ZeRO-3: the shard + the largest unit's gathered copy
//   gradients         whole; ZeRO 2 and 3: the shard
//   optimizer state   state copies x parameters; ZeRO >= 1: the shard
//   activations       (kept activations of one micro-batch x the micro-batches 1F1B has
//                     in flight on the stage + with full recomputation the largest unit's
//                     activations its backward re-makes, one unit at a time)
//                     x the register slots (the arena's copies of an iteration)
//   per iteration     with micro-batches, what the plan computes once per iteration from
//                     the accumulated gradients, one copy each without reuse
//                     (RegisterDef.per_iteration, MemoryBlock.copies = 1): the accumulated
//                     gradients, whole whatever the ZeRO stage (an all-reduce bucket holds
//                     them in place; a reduce-scatter bucket, ZeRO 2 and 3, copies them),
//                     and with ZeRO the shard's new parameters and state and the
//                     parameters gathered from them
//
// Checked against memory planning on the mlp and the gpt with micro-batches and ZeRO
// (tests:auto_parallel_search_test, within 25%; docs/auto_parallel.md, "Measured").
#ifndef COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_
#define COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_

#include <cstdint>

#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

struct PeakTerms {
  double parameter_bytes = 0;  // on one device before ZeRO
  double kept_bytes = 0;       // activations kept for backward, one micro-batch
  double largest_gathered_bytes = 0;    // ZeRO-3: the largest unit's parameters
  double largest_recomputed_bytes = 0;  // full recomputation: the largest unit's activations
  int64_t in_flight = 1;                // micro-batches 1F1B keeps on the stage
  int64_t register_count = 2;           // CompileOptions::register_count
  int64_t optimizer_state_copies = 0;   // ModelProfile::optimizer_state_copies
};

// Bytes at the peak for `terms` under `layout` (its dp, ZeRO stage and micro-batches).
double DevicePeakBytes(const proto::AutoParallelLayout& layout, const PeakTerms& terms);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_
