// The layouts the auto-parallel search considers, in a fixed order, and their names.
//
// Every layout uses all devices: dp x tp x pp = nodes x devices_per_node (ParallelLayout's
// order: pp stages of dp x tp consecutive devices, tp innermost, so a tp group stays in a
// node whenever tp divides devices_per_node). Micro-batches are the divisors of the batch
// over dp up to max_micro_batches; ZeRO 1-3 only with dp > 1; recomputation selective
// only for models with attention cores and full only for models with blocks; tp > 1 only
// for models whose hints shard variables over tp.
#ifndef COMPILER_AUTO_PARALLEL_CANDIDATE_H_
#define COMPILER_AUTO_PARALLEL_CANDIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// "dp=4 tp=2 pp=1 micro_batches=2 zero=1 recompute=none"; with chosen pipeline cuts
// "dp=1 tp=2 pp=2 stage_blocks=3,1 micro_batches=4 zero=0 recompute=none"; with ZB-H1
// "dp=1 tp=2 pp=2 pp_schedule=zb micro_batches=4 zero=0 recompute=none".
std::string LayoutName(const proto::AutoParallelLayout& layout);

// The example flags of the layout: "--dp=4 --tp=2 --pp=1 --micro_batches=2 --zero=1
// --recompute=none".
std::string LayoutFlags(const proto::AutoParallelLayout& layout);

// The layout's blocks per pipeline stage, "3,1", or "balanced" when stage_blocks is empty.
std::string StageBlocksText(const proto::AutoParallelLayout& layout);

// "none", "selective", "full".
std::string RecomputeName(proto::RecomputeMode mode);

// The fields where `layout` differs from `reference`, as in LayoutName ("tp=4 pp=2"), or
// the whole name when none differs.
std::string LayoutDifference(const proto::AutoParallelLayout& layout, const proto::AutoParallelLayout& reference);

// Every layout for `devices` devices in the order that breaks ties: fewer pipeline
// stages, then less tensor parallelism, fewer micro-batches, lower ZeRO stage, less
// recomputation, 1F1B before ZB-H1 (the simpler layout wins an exact tie). Each layout
// with pp > 1 and more than one micro-batch comes with both schedules.
std::vector<proto::AutoParallelLayout> EnumerateLayouts(const ModelProfile& profile, int64_t devices,
                                                        int64_t max_micro_batches);

// True when `a` comes before `b` in EnumerateLayouts' order.
bool SimplerLayout(const proto::AutoParallelLayout& a, const proto::AutoParallelLayout& b);

// SimplerLayout of the families alone: the pipeline cuts (stage_blocks) set aside, so a
// layout with chosen cuts and its balanced twin are neither simpler than the other.
bool SimplerFamily(const proto::AutoParallelLayout& a, const proto::AutoParallelLayout& b);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_CANDIDATE_H_
