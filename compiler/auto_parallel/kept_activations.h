// Which activations memory planning keeps for backward: the forward outputs a backward op
// reads, found in a compiled probe plan, so the cost model's peak counts those and not
// every forward output (peak_bytes.h).
//
// A forward output is kept when a backward actor ("FORWARD_grad/..." kernels) reads its
// register, a view of it (a reshape's output) or a boxing's output of it ("TENSOR/boxing_N/
// STEP": tp gathering the activation for a backward GEMM). The rest die at their last
// forward reader (compiler/passes/memory_planning_pass.cc gives their bytes to later
// outputs): on the gpt a GEMM's output before its bias, the residual sums the next norm
// has read, the attention's masked scores that only its softmax reads.
#ifndef COMPILER_AUTO_PARALLEL_KEPT_ACTIVATIONS_H_
#define COMPILER_AUTO_PARALLEL_KEPT_ACTIVATIONS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// Sets every unit's kept_activation_bytes, kept_tp_activation_bytes and
// kept_attention_core_activation_bytes to the logical bytes of its activations
// (ProfileUnit::activations, whole batch) that a backward actor reads on the first device
// of `probe_plan`, and its planned_kept_bytes and planned_kept_attention_core_bytes to the
// bytes that device's arena holds for them (the registers backward reads, a boxing's
// output where backward reads that: what memory planning keeps, in the tensor layout the
// compiler chose), and profile->kept_activations_counted, planned_kept_tp and
// planned_kept_row_parts. `probe_plan` is the profile's job compiled on one stage (every
// device runs every unit) with tp groups of `probe_tp` devices, each device computing
// 1 / `probe_row_parts` of the batch per micro-batch (dp x micro-batches), no
// recomputation. A plan without backward keeps none.
// INVALID_ARGUMENT when the plan has no device or its first device has no actor.
absl::Status CountKeptActivations(const proto::Plan& probe_plan, int64_t probe_tp, int64_t probe_row_parts,
                                  ModelProfile* profile);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_KEPT_ACTIVATIONS_H_
