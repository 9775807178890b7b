// The FMA chains of fma_peak (bench/gemm/fma_peak.cc), shared with the benchmarks that
// report a GEMM's throughput against this core's fp32 FMA peak measured in the same run
// (bench/precision/bf16_bench.cc): 12 independent chains of fused multiply-adds on zmm
// (Avx512, only where the CPU has AVX-512 F) or ymm (Avx2) registers, `iterations`
// rounds; each returns GFLOP/s (2 flops per lane per FMA) and adds to *sink so the chains
// stay alive.
#ifndef BENCH_GEMM_FMA_PEAK_H_
#define BENCH_GEMM_FMA_PEAK_H_

#include <immintrin.h>

#include <chrono>

namespace oneflow::bench {

constexpr int kChains = 12;

inline double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Returns GFLOP/s; `sink` keeps the chains alive.
__attribute__((target("avx512f"))) inline double Avx512(float* sink, long iterations) {
  __m512 chain[kChains];
  const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (int i = 0; i < kChains; ++i) chain[i] = _mm512_set1_ps(static_cast<float>(i));
  const auto start = std::chrono::steady_clock::now();
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) chain[i] = _mm512_fmadd_ps(chain[i], x, y);
  }
  const double seconds = Seconds(start);
  alignas(64) float lanes[16];
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, chain[i]);
    *sink += lanes[0];
  }
  return static_cast<double>(iterations) * kChains * 32.0 / seconds / 1e9;
}

inline double Avx2(float* sink, long iterations) {
  __m256 chain[kChains];
  const __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (int i = 0; i < kChains; ++i) chain[i] = _mm256_set1_ps(static_cast<float>(i));
  const auto start = std::chrono::steady_clock::now();
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) chain[i] = _mm256_fmadd_ps(chain[i], x, y);
  }
  const double seconds = Seconds(start);
  alignas(32) float lanes[8];
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, chain[i]);
    *sink += lanes[0];
  }
  return static_cast<double>(iterations) * kChains * 16.0 / seconds / 1e9;
}

}  // namespace oneflow::bench

#endif  // BENCH_GEMM_FMA_PEAK_H_
