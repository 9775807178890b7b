// The seam between the runtime and a kind of device: where its registers' memory comes
// from, which function computes a kernel on it, and how bytes cross between it and the
// host. The engine allocates registers' memory blocks through it, the compute behavior
// looks kernels up through it, and checkpoints, data sources, variable initializers and
// the loss sink cross between host and device memory through its copies, so a new device
// kind is a new folder next to kernels/cpu/ implementing this (and a line in
// kernels/backends.cc), not edits across the engine and behaviors. The runtime includes
// no header of a backend's folder: a device's kernel threads come from CreateThreadPool
// and reach kernels as KernelContext::thread_pool. The CUDA backend is not written.
#ifndef KERNELS_DEVICE_BACKEND_H_
#define KERNELS_DEVICE_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/kernel.h"
#include "oneflow_core/placement.h"

namespace oneflow {

// The most threads one device may have: far above any core count a CPU device gets,
// low enough that a typo (--threads_per_device=10000) is refused instead of spawning.
inline constexpr int64_t kMaxThreadsPerDevice = 256;

// OK when 1 <= threads <= kMaxThreadsPerDevice; otherwise INVALID_ARGUMENT naming
// `what` (the flag or field the user wrote, e.g. "--threads_per_device") and the range.
absl::Status CheckThreadsPerDevice(int64_t threads, absl::string_view what);

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual DeviceType type() const = 0;

  // `bytes` of device memory aligned to 64 bytes (a unique block even for 0).
  // RESOURCE_EXHAUSTED naming the size when there is not enough, INVALID_ARGUMENT for a
  // negative size. Thread-safe.
  virtual absl::StatusOr<void*> Allocate(int64_t bytes) = 0;
  virtual void Free(void* memory) = 0;

  // The function computing kernel `kernel_name` (OpDefinition::kernel) on this device;
  // NOT_FOUND naming it and the known names.
  virtual absl::StatusOr<KernelFunction> FindKernel(absl::string_view kernel_name) const = 0;

  // The helper threads of one device's kernels, `threads` counting the device's compute
  // thread (CheckThreadsPerDevice's range, checked by the caller); nullptr for 1 (the
  // kernels run on the compute thread). Shared so that the runtime holds it without
  // knowing the backend's pool type; it outlives the device's kernel calls.
  virtual std::shared_ptr<KernelThreadPool> CreateThreadPool(int64_t threads) const = 0;

  // Copies between host memory and this device's memory (non-overlapping).
  virtual void CopyToHost(void* host, const void* device, int64_t bytes) const = 0;
  virtual void CopyFromHost(void* device, const void* host, int64_t bytes) const = 0;
};

}  // namespace oneflow

#endif  // KERNELS_DEVICE_BACKEND_H_
