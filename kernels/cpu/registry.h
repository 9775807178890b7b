// The CPU kernels: one float32 function (int32/int64 for ids and labels) per kernel name
// of the op registry (OpDefinition::kernel), computing one device's slice of the op
// exactly as the reference does (oneflow_core/ops/reference) on the same slice.
//
//   OF_ASSIGN_OR_RETURN(KernelFunction matmul, FindCpuKernel("matmul"));
//   KernelContext context{&attrs, {a, b}, {out}, step};
//   OF_RETURN_IF_ERROR(matmul(context));
//
// The set of kernels is an explicit list in registry.cc (no static registration), so it
// is visible in one place; conformance_test fails if an op's kernel is missing.
//
// Threading: a kernel is a pure function of its context, safe to call from many device
// threads at once. Matrix products go through kernels/cpu/sgemm.h (oneDNN or OpenBLAS by
// shape; oneDNN's OpenMP capped at one thread per caller). OpenBLAS, which this library switches to
// one thread per call the first time a matmul runs (openblas_set_num_threads(1)): the
// runtime already runs one kernel per device thread, and OpenBLAS's own pool on top
// would oversubscribe the cores. Setting OPENBLAS_NUM_THREADS=1 in the environment does
// the same from process start. A device with --threads_per_device > 1 splits large
// matmuls and optimizer updates over its own pool instead (thread_pool.h): OpenBLAS's
// thread count is process-wide, and a process may run several devices. On CPUs Debian's
// OpenBLAS 0.3.21 does not recognise, the programs' UseBestBlasCore() (blas_core.h, first
// in their main()) restarts the process with the core type cpuid implies, so the fast
// GEMM runs without the user's help.
#ifndef KERNELS_CPU_REGISTRY_H_
#define KERNELS_CPU_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/kernel.h"

namespace oneflow {

// The CPU kernel of `kernel_name`, or NOT_FOUND naming it and listing the known names.
absl::StatusOr<KernelFunction> FindCpuKernel(absl::string_view kernel_name);

// Every kernel name with a CPU kernel, in the order of registry.cc.
std::vector<std::string> CpuKernelNames();

}  // namespace oneflow

#endif  // KERNELS_CPU_REGISTRY_H_
