// Small CUDA kernels with a plain C++ launch API (no CUDA-specific C++ types beyond the
// runtime's cudaError_t / cudaStream_t), compiled by nvcc via cuda_object().
#ifndef KERNELS_CUDA_FILL_KERNEL_H_
#define KERNELS_CUDA_FILL_KERNEL_H_

#include <cstdint>

#include <cuda_runtime_api.h>

namespace oneflow {
namespace cuda {

// y[i] = alpha * x[i] + y[i] for i in [0, n). x and y are device pointers.
// Launches asynchronously on `stream`; returns the launch error (cudaSuccess when n <= 0).
cudaError_t LaunchAxpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream);

// y[i] = value for i in [0, n). y is a device pointer. Asynchronous on `stream`.
cudaError_t LaunchFill(float value, float* y, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace oneflow

#endif  // KERNELS_CUDA_FILL_KERNEL_H_
