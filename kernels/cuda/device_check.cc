#include "kernels/cuda/device_check.h"

#include <sstream>

#include <cuda_runtime_api.h>

namespace oneflow {
namespace cuda {

int VisibleDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later runtime calls start clean
    return 0;
  }
  return count;
}

std::string DescribeCudaDevices() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "no CUDA device: cudaGetDeviceCount reported 0 devices";
  std::ostringstream out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    err = cudaGetDeviceProperties(&prop, i);
    if (i > 0) out << "\n";
    if (err != cudaSuccess) {
      out << "cuda:" << i << " <error: " << cudaGetErrorString(err) << ">";
      continue;
    }
    out << "cuda:" << i << " " << prop.name << " sm_" << prop.major << prop.minor << " "
        << (prop.totalGlobalMem >> 20) << " MiB";
  }
  return out.str();
}

}  // namespace cuda
}  // namespace oneflow
