// Smoke check of the CUDA toolchain, NCCL link and a real device kernel.
//
// Prints the NCCL library version and the visible CUDA devices. With a device, runs
// LaunchAxpy on 1M elements with exactly representable inputs and checks every element.
// Exit codes: 0 success, 1 CUDA/NCCL error or wrong result, 2 no CUDA device.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "kernels/cuda/device_check.h"
#include "kernels/cuda/fill_kernel.h"

namespace {

#define SMOKE_CUDA_CHECK(expr)                                                       \
  do {                                                                               \
    cudaError_t smoke_err = (expr);                                                  \
    if (smoke_err != cudaSuccess) {                                                  \
      std::fprintf(stderr, "cuda_smoke: %s failed: %s\n", #expr,                     \
                   cudaGetErrorString(smoke_err));                                   \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

constexpr int64_t kN = 1 << 20;
constexpr float kAlpha = 2.0f;

// Inputs whose products and sums are exact in float, so the check can be exact even if
// the device contracts alpha*x+y into an FMA.
float XAt(int64_t i) { return static_cast<float>(i % 1000) * 0.5f; }
float YAt(int64_t i) { return 1.0f + static_cast<float>(i % 7); }

int RunAxpy() {
  std::vector<float> x(kN), y(kN);
  for (int64_t i = 0; i < kN; ++i) {
    x[i] = XAt(i);
    y[i] = YAt(i);
  }
  const size_t bytes = sizeof(float) * kN;
  float* d_x = nullptr;
  float* d_y = nullptr;
  cudaStream_t stream = nullptr;
  SMOKE_CUDA_CHECK(cudaSetDevice(0));
  SMOKE_CUDA_CHECK(cudaStreamCreate(&stream));
  SMOKE_CUDA_CHECK(cudaMalloc(&d_x, bytes));
  SMOKE_CUDA_CHECK(cudaMalloc(&d_y, bytes));
  SMOKE_CUDA_CHECK(cudaMemcpyAsync(d_x, x.data(), bytes, cudaMemcpyHostToDevice, stream));
  SMOKE_CUDA_CHECK(cudaMemcpyAsync(d_y, y.data(), bytes, cudaMemcpyHostToDevice, stream));
  SMOKE_CUDA_CHECK(oneflow::cuda::LaunchAxpy(kAlpha, d_x, d_y, kN, stream));
  SMOKE_CUDA_CHECK(cudaMemcpyAsync(y.data(), d_y, bytes, cudaMemcpyDeviceToHost, stream));
  SMOKE_CUDA_CHECK(cudaStreamSynchronize(stream));
  SMOKE_CUDA_CHECK(cudaFree(d_x));
  SMOKE_CUDA_CHECK(cudaFree(d_y));
  SMOKE_CUDA_CHECK(cudaStreamDestroy(stream));

  int64_t mismatches = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = kAlpha * XAt(i) + YAt(i);
    if (y[i] != want) {
      if (mismatches < 10) {
        std::fprintf(stderr, "cuda_smoke: mismatch at %lld: got %.9g want %.9g\n",
                     static_cast<long long>(i), y[i], want);
      }
      ++mismatches;
    }
  }
  if (mismatches != 0) {
    std::fprintf(stderr, "cuda_smoke: axpy FAILED: %lld of %lld elements wrong\n",
                 static_cast<long long>(mismatches), static_cast<long long>(kN));
    return 1;
  }
  std::printf("axpy: %lld elements OK\n", static_cast<long long>(kN));
  return 0;
}

}  // namespace

int main() {
  int nccl_version = 0;
  ncclResult_t nccl_res = ncclGetVersion(&nccl_version);
  if (nccl_res != ncclSuccess) {
    std::fprintf(stderr, "cuda_smoke: ncclGetVersion failed: %s\n",
                 ncclGetErrorString(nccl_res));
    return 1;
  }
  std::printf("NCCL version: %d.%d.%d (code %d, header %d)\n", nccl_version / 10000,
              (nccl_version / 100) % 100, nccl_version % 100, nccl_version, NCCL_VERSION_CODE);

  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  std::printf("CUDA runtime version: %d\n", runtime_version);
  std::printf("devices: %s\n", oneflow::cuda::DescribeCudaDevices().c_str());

  if (oneflow::cuda::VisibleDeviceCount() == 0) {
    std::fprintf(stderr, "cuda_smoke: no CUDA device; skipping the axpy kernel check\n");
    return 2;
  }
  return RunAxpy();
}
