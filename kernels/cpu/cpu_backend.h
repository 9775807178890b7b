// The CPU's device backend (kernels/device_backend.h): host memory, the kernels of
// registry.h, a KernelThreadPool per device (thread_pool.h), memcpy.
#ifndef KERNELS_CPU_CPU_BACKEND_H_
#define KERNELS_CPU_CPU_BACKEND_H_

#include "kernels/device_backend.h"

namespace oneflow {

class CpuBackend final : public DeviceBackend {
 public:
  // The one instance (stateless: any thread may use it).
  static CpuBackend* Get();

  DeviceType type() const override { return DeviceType::kCpu; }
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* memory) override;
  absl::StatusOr<KernelFunction> FindKernel(absl::string_view kernel_name) const override;
  std::shared_ptr<KernelThreadPool> CreateThreadPool(int64_t threads) const override;
  void CopyToHost(void* host, const void* device, int64_t bytes) const override;
  void CopyFromHost(void* device, const void* host, int64_t bytes) const override;
};

}  // namespace oneflow

#endif  // KERNELS_CPU_CPU_BACKEND_H_
