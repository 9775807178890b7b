#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include "kernels/cuda/device_check.h"
#include "kernels/cuda/fill_kernel.h"

namespace oneflow {
namespace cuda {
namespace {

TEST(NcclTest, LibraryVersionIsAtLeast228) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(version, 22800);
  // The library we link is the one whose header we compiled against (same major.minor).
  EXPECT_EQ(version / 100, NCCL_VERSION_CODE / 100);
}

TEST(DeviceCheckTest, DescriptionIsNeverEmpty) {
  const std::string desc = DescribeCudaDevices();
  EXPECT_FALSE(desc.empty());
  if (VisibleDeviceCount() == 0) {
    EXPECT_EQ(desc.rfind("no CUDA device", 0), 0u) << desc;
  } else {
    EXPECT_EQ(desc.rfind("cuda:0 ", 0), 0u) << desc;
  }
}

TEST(AxpyKernelTest, MatchesCpuReference) {
  if (VisibleDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA device (" << DescribeCudaDevices() << ")";
  }
  // Odd size so the grid-stride tail is exercised; more elements than one grid covers.
  constexpr int64_t n = (1 << 21) + 17;
  constexpr float alpha = -1.5f;
  std::vector<float> x(n), y(n), want(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37) % 1013) * 0.25f - 100.0f;
    y[i] = static_cast<float>(i % 11) - 5.0f;
    want[i] = alpha * x[i] + y[i];
  }
  const size_t bytes = sizeof(float) * n;
  float* d_x = nullptr;
  float* d_y = nullptr;
  ASSERT_EQ(cudaMalloc(&d_x, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_y, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_y, y.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(LaunchAxpy(alpha, d_x, d_y, n, /*stream=*/nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(y.data(), d_y, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaFree(d_x), cudaSuccess);
  EXPECT_EQ(cudaFree(d_y), cudaSuccess);

  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (y[i] != want[i]) {
      if (++bad <= 10) ADD_FAILURE() << "y[" << i << "] = " << y[i] << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(FillKernelTest, FillsEveryElement) {
  if (VisibleDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA device (" << DescribeCudaDevices() << ")";
  }
  constexpr int64_t n = 1000003;
  float* d_y = nullptr;
  ASSERT_EQ(cudaMalloc(&d_y, sizeof(float) * n), cudaSuccess);
  ASSERT_EQ(LaunchFill(3.25f, d_y, n, nullptr), cudaSuccess);
  std::vector<float> y(n, 0.0f);
  ASSERT_EQ(cudaMemcpy(y.data(), d_y, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaFree(d_y), cudaSuccess);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.25f) << "at " << i;
}

TEST(AxpyKernelTest, EmptyInputIsANoOp) {
  // n <= 0 never launches, so this holds with or without a device.
  EXPECT_EQ(LaunchAxpy(1.0f, nullptr, nullptr, 0, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace cuda
}  // namespace oneflow
