// The compute side of the cost model: how long one device's kernels take, for the
// predicted step time (`oneflow inspect`, tools/cli/predicted_step_time.h).
//
// Two kinds of kernels, two rates: a GEMM (matmul, fused_matmul_bias) is priced by its
// multiply-adds, 2 m n k FLOPs over the device's f32 GEMM rate; every other kernel is
// memory-bound, priced by the bytes it reads and writes over the device's memory rate.
// `oneflow calibrate` measures both on one thread (a 512^3 SGEMM and a streamed copy);
// plans carry them in Cluster.gemm_flops_per_second / memory_bytes_per_second.
//
// One exception to the one memory rate: a forward kernel's output that the layout does not
// keep for backward (recomputation re-makes it) dies at its last forward reader, so memory
// planning hands its bytes to a later output while they are still in the core's cache;
// an output kept for backward is written into bytes last touched a whole step ago. Traced
// (docs/auto_parallel_measurements.md, "Recomputation and the cache (session 47)"), the
// forward's memory-bound kernels ran 13-40% faster with full recomputation while backward's
// did not (the recomputed copies, 27 of a block's 30 ops, ran about as the forward's kernels
// without recomputation: no clear gain, not priced). Such a write, when the output fits in the
// cache, is priced at the rate of a copy that stays in the cache (`oneflow calibrate`'s
// "memory_cached" line; the search's PriceOptions carry it: plans and their run summaries
// price every byte at the memory rate).
#ifndef SBP_COMPUTE_COST_H_
#define SBP_COMPUTE_COST_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "sbp/gemm_shape_model.h"

namespace oneflow {

struct ComputeRates {
  double gemm_flops_per_second = 0;
  double memory_bytes_per_second = 0;
  // Bytes/s read + written by a copy whose bytes stay in one core's cache, and that
  // cache's bytes; 0: not measured (WithDefaults: every byte at memory_bytes_per_second).
  double memory_cached_bytes_per_second = 0;
  double cache_bytes = 0;
  // A GEMM's seconds by its shape (gemm_shape_model.h; `oneflow calibrate`'s "gemm_shape"
  // line, carried by the plan's Cluster: compiler/cluster_compute_rates.h). Not measured:
  // every GEMM at gemm_flops_per_second.
  GemmShapeModel gemm_shape;
};

// For a plan without measured rates: one core of the development machine as
// docs/sbp_and_boxing.md reports it (OpenBLAS/oneDNN SGEMM ~1e11 FLOP/s with the right
// core type, a streamed copy ~1e10 B/s read + written), rounded down.
constexpr ComputeRates kDefaultComputeRates{5e10, 1e10};

// `rates` with each rate that is not a finite number > 0 replaced by its default (the
// cached rate's default is the memory rate; cache_bytes' is 0: no output fits).
ComputeRates WithDefaults(const ComputeRates& rates);

// True for the kernels priced as a GEMM.
bool IsGemmKernel(absl::string_view kernel);

// 2 m n k of a matmul-shaped product from its input `a` (batches x m x k elements, in any
// transpose) and its output's last dimension n: 2 x elements(a) x n.
double GemmFlops(int64_t a_elements, int64_t n);

double GemmSeconds(const ComputeRates& rates, double flops);
// One call of `shape`: the shape model's seconds when measured, else its FLOPs at the one
// GEMM rate (GemmSeconds).
double GemmShapeSeconds(const ComputeRates& rates, const GemmShape& shape);
double MemoryBoundSeconds(const ComputeRates& rates, double bytes);

// True when an output of `bytes` (one device's) fits in the cache: its write can go to
// bytes still cached (price it with CachedWriteSeconds). False without a measured cache.
bool FitsInCache(const ComputeRates& rates, double bytes);
// `bytes` written into cache-resident bytes, at memory_cached_bytes_per_second.
double CachedWriteSeconds(const ComputeRates& rates, double bytes);

}  // namespace oneflow

#endif  // SBP_COMPUTE_COST_H_
