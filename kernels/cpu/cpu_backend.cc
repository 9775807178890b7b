#include "kernels/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "kernels/cpu/registry.h"

namespace oneflow {

CpuBackend* CpuBackend::Get() {
  static CpuBackend* const backend = new CpuBackend();
  return backend;
}

void* CpuBackend::Allocate(int64_t bytes) {
  if (bytes < 0) return nullptr;
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a unique block.
  const size_t rounded = static_cast<size_t>((bytes + 63) / 64 * 64 + 64);
  return std::aligned_alloc(64, rounded);
}

void CpuBackend::Free(void* memory) { std::free(memory); }

absl::StatusOr<KernelFunction> CpuBackend::FindKernel(absl::string_view kernel_name) const {
  return FindCpuKernel(kernel_name);
}

void CpuBackend::CopyToHost(void* host, const void* device, int64_t bytes) const {
  if (bytes > 0) std::memcpy(host, device, static_cast<size_t>(bytes));
}

void CpuBackend::CopyFromHost(void* device, const void* host, int64_t bytes) const {
  if (bytes > 0) std::memcpy(device, host, static_cast<size_t>(bytes));
}

}  // namespace oneflow
