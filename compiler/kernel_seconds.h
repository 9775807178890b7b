// The compute side of the cost model for one actor of a built plan: its kernels priced by
// sbp/compute_cost.h (a GEMM by its multiply-adds, any other kernel by the bytes of the
// registers it reads and writes). Shared by the predicted step time (`oneflow inspect`,
// tools/cli/predicted_step_time.h) and the reduction order of node-crossing buckets
// (compiler/passes/reduction_priority.h), so both read the same compute model.
#ifndef COMPILER_KERNEL_SECONDS_H_
#define COMPILER_KERNEL_SECONDS_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "proto/plan.pb.h"
#include "sbp/compute_cost.h"

namespace oneflow {

struct KernelSeconds {
  double gemm_seconds = 0;
  double memory_bound_seconds = 0;

  double seconds() const { return gemm_seconds + memory_bound_seconds; }
};

// The device's registers by id, as the actors name them.
using RegistersById = absl::flat_hash_map<int64_t, const proto::RegisterDef*>;
RegistersById RegistersOf(const proto::DevicePlan& device);

// One act of `actor`'s kernels at `rates` (every kernel, whatever thread the actor is on:
// callers pick the compute actors). A kernel whose registers are not in `registers` costs
// what the ones found cost.
KernelSeconds ActorKernelSeconds(const proto::ActorDef& actor, const RegistersById& registers,
                                 const ComputeRates& rates);

}  // namespace oneflow

#endif  // COMPILER_KERNEL_SECONDS_H_
