#include "kernels/backends.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(BackendsTest, CpuBackendAllocatesFindsKernelsAndCopies) {
  absl::StatusOr<DeviceBackend*> backend = BackendFor(DeviceType::kCpu);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->type(), DeviceType::kCpu);
  void* memory = (*backend)->Allocate(1000);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(memory) % 64, 0u);
  const std::vector<float> host = {1.5f, -2.0f, 3.25f};
  (*backend)->CopyFromHost(memory, host.data(), 12);
  std::vector<float> back(3, 0.0f);
  (*backend)->CopyToHost(back.data(), memory, 12);
  EXPECT_EQ(back, host);
  (*backend)->Free(memory);
  EXPECT_TRUE((*backend)->FindKernel("matmul").ok());
  const absl::StatusOr<KernelFunction> missing = (*backend)->FindKernel("no_such_kernel");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_kernel"), absl::string_view::npos) << missing.status();
}

TEST(BackendsTest, CudaIsRefusedByThisBuild) {
  const absl::StatusOr<DeviceBackend*> cuda = BackendFor(DeviceType::kCuda);
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cuda.status().message(), "this build has no cuda backend: it runs CPU devices only");
}

}  // namespace
}  // namespace oneflow
