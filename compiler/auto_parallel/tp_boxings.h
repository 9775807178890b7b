// The tensor-parallel boxings a compiled tp probe plan runs, mapped to the profile's
// units, so the cost model prices tp as the compiler plans it rather than as Megatron's
// all-reduces. The compiler chooses SBP per op (sbp/ greedy choice): for a small gpt it
// gathers each tp-sharded weight, splits the rows and reduce-scatters the residual
// stream (docs/auto_parallel_measurements.md, "Prediction on emulated hosts"), which sends other
// collectives and bytes than the all-reduces the hints imply.
//
// The plan also says which work tp divides: the compiler may split the rows of ops the
// hints leave whole (layer norms), and leaves whole only the ops on partial tensors.
//
// A boxing belongs to the unit of the forward op that produced its tensor (a backward
// op's "FORWARD_grad/" prefix), else of the op that reads it (a variable's gather), else
// to the first unit. Boxings without a collective step (local slices, B -> P) are skipped.
#ifndef COMPILER_AUTO_PARALLEL_TP_BOXINGS_H_
#define COMPILER_AUTO_PARALLEL_TP_BOXINGS_H_

#include "absl/status/status.h"
#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// Sets every unit's tp_boxings from `probe_plan`, the profile's probe job compiled on one
// tp group (dp = pp = 1: every boxing is on the tp axis; with micro-batches, standing for
// a layout's rows per device, an activation's bytes are scaled to the whole batch), the work tp
// divides (tp_gemm_flops, tp_memory_bytes and each op's) to that of the ops the plan runs
// on a split tensor (an input or output S over the tp axis), and
// profile->tp_boxings_counted. INVALID_ARGUMENT when the profile has no tp hints, the
// plan has fewer than two devices, or a boxing's tensor is not in the plan's job.
absl::Status CountTpBoxings(const proto::Plan& probe_plan, ModelProfile* profile);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_TP_BOXINGS_H_
