// fma_peak: the single-thread FMA peak of this core, in GFLOP/s, as one JSON line:
//
//   {"bench":"fma_peak","isa":"avx512","gflops":116.7,"gflops_avx2":116.9,"seconds":0.41}
//
// The ceiling any single-thread GEMM can reach here: 12 independent chains of fused
// multiply-adds on the widest vector registers the CPU runs (zmm with AVX-512 F, else
// ymm), long enough that the loop's overhead vanishes; each FMA counts 2 flops per lane.
// 12 chains cover the FMA latency (4 cycles) times the FMA ports (2) with room to spare,
// so the figure is the port throughput. bench/train/vs_pytorch.py uses it to say how far
// each case's GEMM work alone is from PyTorch's step (docs/benchmarks.md, "The 1-device
// mlp against the machine's peak").
#include <immintrin.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr int kChains = 12;
constexpr long kIterations = 100'000'000;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Returns GFLOP/s; `sink` keeps the chains alive.
__attribute__((target("avx512f"))) double Avx512(float* sink) {
  __m512 chain[kChains];
  const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (int i = 0; i < kChains; ++i) chain[i] = _mm512_set1_ps(static_cast<float>(i));
  const auto start = std::chrono::steady_clock::now();
  for (long it = 0; it < kIterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) chain[i] = _mm512_fmadd_ps(chain[i], x, y);
  }
  const double seconds = Seconds(start);
  alignas(64) float lanes[16];
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, chain[i]);
    *sink += lanes[0];
  }
  return kIterations * kChains * 32.0 / seconds / 1e9;
}

double Avx2(float* sink) {
  __m256 chain[kChains];
  const __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (int i = 0; i < kChains; ++i) chain[i] = _mm256_set1_ps(static_cast<float>(i));
  const auto start = std::chrono::steady_clock::now();
  for (long it = 0; it < kIterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) chain[i] = _mm256_fmadd_ps(chain[i], x, y);
  }
  const double seconds = Seconds(start);
  alignas(32) float lanes[8];
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, chain[i]);
    *sink += lanes[0];
  }
  return kIterations * kChains * 16.0 / seconds / 1e9;
}

}  // namespace

int main() {
  float sink = 0;
  const auto start = std::chrono::steady_clock::now();
  const double avx2 = Avx2(&sink);
  const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const double avx512 = has_avx512 ? Avx512(&sink) : 0;
  std::printf("{\"bench\":\"fma_peak\",\"isa\":\"%s\",\"gflops\":%.1f,\"gflops_avx2\":%.1f,\"seconds\":%.2f,"
              "\"sink\":%g}\n",
              has_avx512 ? "avx512" : "avx2", has_avx512 && avx512 > avx2 ? avx512 : avx2, avx2, Seconds(start),
              static_cast<double>(sink));
  return 0;
}
