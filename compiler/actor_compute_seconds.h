// One compute actor's kernel seconds as the cost model prices them from a plan
// (sbp/compute_cost.h): a GEMM kernel by its shape (sbp/gemm_shape_model.h) where the
// cluster's shape model was measured, else by its 2 m n k FLOPs at the GEMM rate; any
// other kernel by the bytes of the registers it reads and writes at the memory rate.
// Shared by the predicted step time of `oneflow inspect` (tools/cli/predicted_step_time.h)
// and the compiler's timeline of one device's backward (passes/reduction_tail_order.h).
#ifndef COMPILER_ACTOR_COMPUTE_SECONDS_H_
#define COMPILER_ACTOR_COMPUTE_SECONDS_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "proto/plan.pb.h"
#include "sbp/compute_cost.h"

namespace oneflow {

// A device's registers by id (DevicePlan.registers).
using RegistersById = absl::flat_hash_map<int64_t, const proto::RegisterDef*>;

RegistersById RegistersOf(const proto::DevicePlan& device);

struct ActorComputeSeconds {
  double gemm_seconds = 0;
  double memory_bound_seconds = 0;
  double seconds() const { return gemm_seconds + memory_bound_seconds; }
};

// The seconds of one act of `actor`'s kernels; registers it names that `registers` lacks
// count 0 bytes. Whatever thread the actor is on (callers pick the compute ones).
ActorComputeSeconds PriceActorKernels(const proto::ActorDef& actor, const RegistersById& registers,
                                      const ComputeRates& rates);

}  // namespace oneflow

#endif  // COMPILER_ACTOR_COMPUTE_SECONDS_H_
