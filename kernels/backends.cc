#include "kernels/backends.h"

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"

namespace oneflow {

absl::StatusOr<DeviceBackend*> BackendFor(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu:
      return CpuBackend::Get();
    case DeviceType::kCuda:
      break;
  }
  return absl::FailedPreconditionError(absl::StrCat("this build has no ", DeviceTypeName(type),
                                                    " backend: it runs CPU devices only"));
}

DeviceType PlanDeviceType(const proto::Plan& plan) {
  return plan.cluster().device_type() == proto::DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
}

}  // namespace oneflow
