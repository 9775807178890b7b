// The compute side of the cost model: how long one device's kernels take, for the
// predicted step time (`oneflow inspect`, tools/cli/predicted_step_time.h).
//
// Two kinds of kernels, two rates: a GEMM (matmul, fused_matmul_bias) is priced by its
// multiply-adds, 2 m n k FLOPs over the device's f32 GEMM rate; every other kernel is
// memory-bound, priced by the bytes it reads and writes over the device's memory rate.
// `oneflow calibrate` measures both on one thread (a 512^3 SGEMM and a streamed copy);
// plans carry them in Cluster.gemm_flops_per_second / memory_bytes_per_second.
#ifndef SBP_COMPUTE_COST_H_
#define SBP_COMPUTE_COST_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace oneflow {

struct ComputeRates {
  double gemm_flops_per_second = 0;
  double memory_bytes_per_second = 0;
};

// For a plan without measured rates: one core of the development machine as
// docs/sbp_and_boxing.md reports it (OpenBLAS/oneDNN SGEMM ~1e11 FLOP/s with the right
// core type, a streamed copy ~1e10 B/s read + written), rounded down.
constexpr ComputeRates kDefaultComputeRates{5e10, 1e10};

// `rates` with each rate that is not a finite number > 0 replaced by its default.
ComputeRates WithDefaults(const ComputeRates& rates);

// True for the kernels priced as a GEMM.
bool IsGemmKernel(absl::string_view kernel);

// 2 m n k of a matmul-shaped product from its input `a` (batches x m x k elements, in any
// transpose) and its output's last dimension n: 2 x elements(a) x n.
double GemmFlops(int64_t a_elements, int64_t n);

double GemmSeconds(const ComputeRates& rates, double flops);
double MemoryBoundSeconds(const ComputeRates& rates, double bytes);

}  // namespace oneflow

#endif  // SBP_COMPUTE_COST_H_
