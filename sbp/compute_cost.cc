#include "sbp/compute_cost.h"

#include <cmath>

namespace oneflow {

ComputeRates WithDefaults(const ComputeRates& rates) {
  auto valid = [](double rate) { return std::isfinite(rate) && rate > 0; };
  ComputeRates with;
  with.gemm_flops_per_second =
      valid(rates.gemm_flops_per_second) ? rates.gemm_flops_per_second : kDefaultComputeRates.gemm_flops_per_second;
  with.memory_bytes_per_second =
      valid(rates.memory_bytes_per_second) ? rates.memory_bytes_per_second : kDefaultComputeRates.memory_bytes_per_second;
  with.memory_cached_bytes_per_second =
      valid(rates.memory_cached_bytes_per_second) ? rates.memory_cached_bytes_per_second : with.memory_bytes_per_second;
  with.cache_bytes = valid(rates.cache_bytes) ? rates.cache_bytes : 0;
  const GemmShapeModel& shape = rates.gemm_shape;
  if (valid(shape.flops_per_second) && std::isfinite(shape.operand_bytes_per_second) &&
      shape.operand_bytes_per_second >= 0 && std::isfinite(shape.call_seconds) && shape.call_seconds >= 0) {
    with.gemm_shape = shape;
  }
  return with;
}

bool IsGemmKernel(absl::string_view kernel) { return kernel == "matmul" || kernel == "fused_matmul_bias"; }

double GemmFlops(int64_t a_elements, int64_t n) { return 2.0 * static_cast<double>(a_elements) * n; }

double GemmSeconds(const ComputeRates& rates, double flops) { return flops / rates.gemm_flops_per_second; }

double GemmShapeSeconds(const ComputeRates& rates, const GemmShape& shape) {
  return rates.gemm_shape.measured() ? rates.gemm_shape.Seconds(shape) : GemmSeconds(rates, shape.Flops());
}

double MemoryBoundSeconds(const ComputeRates& rates, double bytes) { return bytes / rates.memory_bytes_per_second; }

bool FitsInCache(const ComputeRates& rates, double bytes) { return rates.cache_bytes > 0 && bytes <= rates.cache_bytes; }

double CachedWriteSeconds(const ComputeRates& rates, double bytes) {
  return bytes / rates.memory_cached_bytes_per_second;
}

}  // namespace oneflow
