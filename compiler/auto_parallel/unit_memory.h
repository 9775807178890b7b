// What one unit of the profile holds on one device of a layout, one micro-batch: the
// memory side of the cost model's price of a unit (price.cc), whose sums over a stage are
// the peak's terms (peak_bytes.h).
//
//   parameters   the unit's variables, tp-sharded ones divided by tp
//   gradients    as many bytes, but whole for a sharded weight the tp probe plan gathers
//                whole for its readers (its gradient is a partial sum of the whole weight,
//                reduce-scattered at its update)
//   gathered     those gathered weights
//   kept         the activations backward reads (kept_activations.h): as a probe plan of
//                the layout's tp degree keeps them, scaled to the layout's rows, else from
//                the hints (the hinted-split part divided by tp); selective recomputation
//                drops the attention core's, full recomputation keeps the unit's input
//                and re-makes the rest in its backward (`recomputed`)
#ifndef COMPILER_AUTO_PARALLEL_UNIT_MEMORY_H_
#define COMPILER_AUTO_PARALLEL_UNIT_MEMORY_H_

#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

struct UnitMemory {
  double parameter_bytes = 0;  // before ZeRO
  double gradient_bytes = 0;
  double gathered_bytes = 0;
  double kept_bytes = 0;
  // With full recomputation, what the unit's backward re-makes and holds while it runs
  // (its activations without recomputation); 0 otherwise.
  double recomputed_bytes = 0;
};

// The profile whose tp probe keeps what `layout`'s devices keep: the probe whose devices
// compute the rows the layout's do (dp x micro-batches micro-batches of the batch on one
// tp group), or the nearest below it (ProfileForTp). The compiler lays a tp group's
// tensors out otherwise as the rows per device fall: the bench's gpt at dp = 2 x tp = 2
// and one micro-batch gathers its attention weights only, where its tp = 2 probe of the
// whole batch gathers every weight (memory predicted 1.4-2.0 x the planned from that
// probe). (A probe of the layout's own dp x tp, tried in session 56, predicted the bench's
// gpt's peaks no closer: 97.1% of its 8-device layouts within 25% either way.)
const ModelProfile& MemoryProfileOf(const ModelProfile& profile, const proto::AutoParallelLayout& layout);

// `unit` under `layout`, one micro-batch of one device; `memory_unit` is the same unit in
// `memory_profile` (MemoryProfileOf), whose probe's kept bytes and gathers it reads.
// `in_block`: the unit is a block recomputation works on.
UnitMemory UnitMemoryOf(const ProfileUnit& unit, const ProfileUnit& memory_unit, const ModelProfile& memory_profile,
                        const proto::AutoParallelLayout& layout, bool in_block);

// The bytes of a data-parallel gradient bucket memory planning holds whole from its first
// member on (peak_bytes.h BackwardHeldBytes), `bucket_mb` MiB, or 0 where there is none
// such: gradients as bucket views (compiler/passes/memory_planning_pass.cc) need data
// parallelism and one micro-batch (with more, the buckets hold the accumulated gradients,
// once per iteration), all-reduce buckets (ZeRO 2 and 3 reduce-scatter, whose buckets
// copy), and no tp: the gradients the dp buckets sum come out of tp's own reductions,
// which planning does not place in the bucket (the bench's gpt on 8 devices, dp x tp with
// one micro-batch, was predicted 1.26-1.39 x the planned peak with them held from
// backward's start).
double GradientBucketBytes(const proto::AutoParallelLayout& layout, double bucket_mb);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_UNIT_MEMORY_H_
