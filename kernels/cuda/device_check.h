// Host-side description of the CUDA devices visible to this process.
#ifndef KERNELS_CUDA_DEVICE_CHECK_H_
#define KERNELS_CUDA_DEVICE_CHECK_H_

#include <string>

namespace oneflow {
namespace cuda {

// Number of visible CUDA devices; 0 when cudaGetDeviceCount fails (no driver, no GPU).
int VisibleDeviceCount();

// One line per device: "cuda:<i> <name> sm_<major><minor> <MiB> MiB", or, when no device
// can be used, "no CUDA device: <cudaGetErrorString>".
std::string DescribeCudaDevices();

}  // namespace cuda
}  // namespace oneflow

#endif  // KERNELS_CUDA_DEVICE_CHECK_H_
