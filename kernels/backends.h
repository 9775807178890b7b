// The device backends this build has (kernels/device_backend.h), by device kind.
#ifndef KERNELS_BACKENDS_H_
#define KERNELS_BACKENDS_H_

#include "absl/status/statusor.h"
#include "kernels/device_backend.h"
#include "oneflow_core/placement.h"
#include "proto/plan.pb.h"

namespace oneflow {

// The process-wide backend of `type`: the CPU's; FAILED_PRECONDITION for a kind this
// build cannot run (cuda: its kernels and communicator are not wired into the runtime).
absl::StatusOr<DeviceBackend*> BackendFor(DeviceType type);

// The device kind `plan`'s cluster names.
DeviceType PlanDeviceType(const proto::Plan& plan);

}  // namespace oneflow

#endif  // KERNELS_BACKENDS_H_
