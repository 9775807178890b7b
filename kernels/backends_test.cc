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
  absl::StatusOr<void*> allocated = (*backend)->Allocate(1000);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  void* memory = *allocated;
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

TEST(BackendsTest, CpuBackendRefusesANegativeSizeAndMemoryItCannotHave) {
  absl::StatusOr<DeviceBackend*> backend = BackendFor(DeviceType::kCpu);
  ASSERT_TRUE(backend.ok()) << backend.status();
  const absl::StatusOr<void*> negative = (*backend)->Allocate(-8);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(), "cannot allocate -8 bytes of host memory");
  // 2^62 bytes: more than any machine's address space holds, so aligned_alloc fails.
  const absl::StatusOr<void*> huge = (*backend)->Allocate(int64_t{1} << 62);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(huge.status().message(),
            "out of host memory: allocating 4611686018427387904 bytes for a device's registers failed");
}

TEST(BackendsTest, CpuBackendGivesADeviceOfSeveralThreadsAPool) {
  absl::StatusOr<DeviceBackend*> backend = BackendFor(DeviceType::kCpu);
  ASSERT_TRUE(backend.ok()) << backend.status();
  // One thread: the kernels run on the compute thread, no pool.
  EXPECT_EQ((*backend)->CreateThreadPool(1), nullptr);
  EXPECT_NE((*backend)->CreateThreadPool(3), nullptr);
}

TEST(BackendsTest, CudaIsRefusedByThisBuild) {
  const absl::StatusOr<DeviceBackend*> cuda = BackendFor(DeviceType::kCuda);
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cuda.status().message(), "this build has no cuda backend: it runs CPU devices only");
}

}  // namespace
}  // namespace oneflow
