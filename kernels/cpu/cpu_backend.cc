#include "kernels/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/thread_pool.h"

namespace oneflow {

CpuBackend* CpuBackend::Get() {
  static CpuBackend* const backend = new CpuBackend();
  return backend;
}

absl::StatusOr<void*> CpuBackend::Allocate(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a unique block.
  const size_t rounded = static_cast<size_t>((bytes + 63) / 64 * 64 + 64);
  void* memory = std::aligned_alloc(64, rounded);
  if (memory == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory: allocating ", bytes, " bytes for a device's registers failed"));
  }
  return memory;
}

void CpuBackend::Free(void* memory) { std::free(memory); }

absl::StatusOr<KernelFunction> CpuBackend::FindKernel(absl::string_view kernel_name) const {
  return FindCpuKernel(kernel_name);
}

std::shared_ptr<KernelThreadPool> CpuBackend::CreateThreadPool(int64_t threads) const {
  if (threads <= 1) return nullptr;
  return std::make_shared<KernelThreadPool>(static_cast<int>(threads));
}

void CpuBackend::CopyToHost(void* host, const void* device, int64_t bytes) const {
  if (bytes > 0) std::memcpy(host, device, static_cast<size_t>(bytes));
}

void CpuBackend::CopyFromHost(void* device, const void* host, int64_t bytes) const {
  if (bytes > 0) std::memcpy(device, host, static_cast<size_t>(bytes));
}

}  // namespace oneflow
