#include "sbp/compute_cost.h"

#include <cmath>

namespace oneflow {

ComputeRates WithDefaults(const ComputeRates& rates) {
  auto valid = [](double rate) { return std::isfinite(rate) && rate > 0; };
  return ComputeRates{
      valid(rates.gemm_flops_per_second) ? rates.gemm_flops_per_second : kDefaultComputeRates.gemm_flops_per_second,
      valid(rates.memory_bytes_per_second) ? rates.memory_bytes_per_second
                                           : kDefaultComputeRates.memory_bytes_per_second};
}

bool IsGemmKernel(absl::string_view kernel) { return kernel == "matmul" || kernel == "fused_matmul_bias"; }

double GemmFlops(int64_t a_elements, int64_t n) { return 2.0 * static_cast<double>(a_elements) * n; }

double GemmSeconds(const ComputeRates& rates, double flops) { return flops / rates.gemm_flops_per_second; }

double MemoryBoundSeconds(const ComputeRates& rates, double bytes) { return bytes / rates.memory_bytes_per_second; }

}  // namespace oneflow
