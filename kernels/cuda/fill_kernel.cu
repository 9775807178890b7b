#include "kernels/cuda/fill_kernel.h"

#include <algorithm>

#include <cuda_runtime.h>

namespace oneflow {
namespace cuda {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void AxpyKernel(float alpha, const float* __restrict__ x, float* __restrict__ y,
                           int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = alpha * x[i] + y[i];
  }
}

__global__ void FillKernel(float value, float* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = value;
  }
}

int NumBlocks(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<int>(std::min(blocks, kMaxBlocks));
}

}  // namespace

cudaError_t LaunchAxpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  AxpyKernel<<<NumBlocks(n), kThreadsPerBlock, 0, stream>>>(alpha, x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchFill(float value, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillKernel<<<NumBlocks(n), kThreadsPerBlock, 0, stream>>>(value, y, n);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace oneflow
