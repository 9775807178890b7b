// The cost model's memory: what one device of a layout holds at its peak, as memory
// planning (compiler/passes/memory_planning_pass.cc) will allocate it:
//
//   persistent        parameters (ZeRO-3: the shard + the largest unit's gathered copy)
//                     and optimizer state (state copies x parameters; ZeRO >= 1: the shard)
//   the arena         copies x one slot. Copies: the device's register count, pp - stage on
//                     a pipeline with micro-batches (each micro-batch in flight has its own
//                     slot: PipelineSchedulePass), else CompileOptions::register_count. A
//                     slot holds what one micro-batch's iteration has live at once, which
//                     peaks in backward (BackwardHeldBytes): the activations backward still
//                     has to read plus the gradients it has made (which live in the arena
//                     until the optimizer or the accumulators read them), plus with full
//                     recomputation the largest unit's re-made activations; with ZeRO >= 2
//                     and one micro-batch at least the end of backward's reduce-scatter:
//                     the gradients, the bucket packing them and the shard it reduces to
//   receptions        copies x what a pipeline stage receives per micro-batch (the
//                     activation entering it, the gradient coming back)
//   per iteration     with micro-batches, what the plan computes once per iteration from
//                     the accumulated gradients, one copy each without reuse
//                     (RegisterDef.per_iteration, MemoryBlock.copies = 1): the accumulated
//                     gradients, whole whatever the ZeRO stage (an all-reduce bucket holds
//                     them in place; a reduce-scatter bucket, ZeRO 2 and 3, copies them),
//                     and with ZeRO the shard's new parameters and state and the
//                     parameters gathered from them
//   tp's gathers      a sharded weight tensor parallelism gathers whole (the compiler's
//                     per-op choice, read from the tp probe plans: tp_boxings.h): the
//                     gathered copy, per iteration with micro-batches and in the slot
//                     without, and its gradient whole (a partial sum) wherever the
//                     gradients are, with micro-batches also copied once per iteration
//                     into the reduce-scatter bucket that takes it to its shard
//
// Until session 56 the activations were every forward output (now those backward reads:
// kept_activations.h), times the micro-batches 1F1B keeps in flight times the register
// count (a pipeline's slots counted twice), and the gradients once outside the arena: the
// bench's gpt on 4 devices was predicted at 0.51-1.91 x memory planning's peak
// (bench/auto_parallel:peak_bench; docs/auto_parallel.md, "Memory").
#ifndef COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_
#define COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_

#include <cstdint>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// One unit of a stage, in forward order, for one micro-batch on one device: the
// activations it keeps for its backward and the bytes of its parameters' gradients.
struct HeldUnit {
  double kept_bytes = 0;
  double gradient_bytes = 0;
};

// The most a stage's backward holds at once of `units`' kept activations and gradients:
// backward runs the units last to first, each reading its kept activations (freed after)
// and making its gradients, which stay. With `bucket_bytes` > 0 the gradients go into
// all-reduce buckets of that many bytes filled in backward order, whose bytes are live
// from their first member on (gradients as bucket views: the whole bucket is held as
// soon as it starts); 0: each gradient is held from when it is made.
double BackwardHeldBytes(const std::vector<HeldUnit>& units, double bucket_bytes);

struct PeakTerms {
  double parameter_bytes = 0;  // on one device before ZeRO
  // The gradients of those parameters on one device, one micro-batch: as many bytes,
  // but whole where tensor parallelism gathers a sharded weight for its readers (the
  // gradient is then a partial sum of the whole weight, reduce-scattered at the update).
  double gradient_bytes = 0;
  // Sharded weights tensor parallelism gathers whole for their readers: computed from the
  // variables once per iteration and read by forward and backward.
  double gathered_bytes = 0;
  double kept_bytes = 0;       // activations kept for backward, one micro-batch
  // The slot's backward peak of activations and gradients (BackwardHeldBytes); < 0: not
  // given, the sum kept_bytes + gradient_bytes (its bound, additive over units: what the
  // cut search adds up, stage_cuts.h).
  double backward_held_bytes = -1;
  double largest_gathered_bytes = 0;    // ZeRO-3: the largest unit's parameters
  double largest_recomputed_bytes = 0;  // full recomputation: the largest unit's activations
  double received_bytes = 0;            // a pipeline stage's receptions, one micro-batch
  int64_t stage = 0;                    // the device's pipeline stage
  int64_t register_count = 2;           // CompileOptions::register_count
  int64_t optimizer_state_copies = 0;   // ModelProfile::optimizer_state_copies
};

// The arena's copies of a device of `stage` under `layout`: pp - stage on a pipeline with
// micro-batches, else `register_count`.
int64_t ArenaCopies(const proto::AutoParallelLayout& layout, int64_t stage, int64_t register_count);

// Bytes at the peak for `terms` under `layout` (its dp, pp, ZeRO stage and micro-batches).
double DevicePeakBytes(const proto::AutoParallelLayout& layout, const PeakTerms& terms);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_PEAK_BYTES_H_
