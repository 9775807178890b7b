// The seam between the runtime and a kind of device: where its registers' memory comes
// from, which function computes a kernel on it, and how bytes cross between it and the
// host. The engine allocates registers' memory blocks through it, the compute behavior
// looks kernels up through it, and checkpoints save and load through its copies, so a new
// device kind is a new folder next to kernels/cpu/ implementing this (and a line in
// kernels/backends.cc), not edits across the engine and behaviors. Only what the CPU path
// needs today: the data sources and the loss sink still write and read register memory
// directly (host memory on the CPU), and the CUDA backend is not written.
#ifndef KERNELS_DEVICE_BACKEND_H_
#define KERNELS_DEVICE_BACKEND_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/kernel.h"
#include "oneflow_core/placement.h"

namespace oneflow {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual DeviceType type() const = 0;

  // `bytes` of device memory aligned to 64 bytes, or nullptr when there is not enough.
  // Thread-safe.
  virtual void* Allocate(int64_t bytes) = 0;
  virtual void Free(void* memory) = 0;

  // The function computing kernel `kernel_name` (OpDefinition::kernel) on this device;
  // NOT_FOUND naming it and the known names.
  virtual absl::StatusOr<KernelFunction> FindKernel(absl::string_view kernel_name) const = 0;

  // Copies between host memory and this device's memory (non-overlapping).
  virtual void CopyToHost(void* host, const void* device, int64_t bytes) const = 0;
  virtual void CopyFromHost(void* device, const void* host, int64_t bytes) const = 0;
};

}  // namespace oneflow

#endif  // KERNELS_DEVICE_BACKEND_H_
