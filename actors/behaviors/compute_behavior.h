// Behavior of a compute actor: its op's kernel, found through the device's backend
// (kernels/device_backend.h), on this device's register slots,
// with each argument's layout (where its slice sits in the logical tensor). An actor
// whose output register is a view of its input (RegisterDef.alias_of) runs no kernel:
// the bytes are already there.
//
// `pool` (may be null: one thread) is the device's kernel thread pool, made by the
// backend (DeviceBackend::CreateThreadPool, --threads_per_device): each act hands it to
// its kernel as KernelContext::thread_pool, so large kernels split their work over it.
#ifndef ACTORS_BEHAVIORS_COMPUTE_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_COMPUTE_BEHAVIOR_H_

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "kernels/device_backend.h"
#include "kernels/kernel.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

absl::StatusOr<ActFunction> BindCompute(const PlanIndex& index, const ActorBinding& binding,
                                        KernelThreadPool* pool, const DeviceBackend& backend);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_COMPUTE_BEHAVIOR_H_
