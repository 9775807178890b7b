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
#include <cstdio>

#include "bench/gemm/fma_peak.h"

using oneflow::bench::Avx2;
using oneflow::bench::Avx512;
using oneflow::bench::Seconds;

constexpr long kIterations = 100'000'000;

int main() {
  float sink = 0;
  const auto start = std::chrono::steady_clock::now();
  const double avx2 = Avx2(&sink, kIterations);
  const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const double avx512 = has_avx512 ? Avx512(&sink, kIterations) : 0;
  std::printf("{\"bench\":\"fma_peak\",\"isa\":\"%s\",\"gflops\":%.1f,\"gflops_avx2\":%.1f,\"seconds\":%.2f,"
              "\"sink\":%g}\n",
              has_avx512 ? "avx512" : "avx2", has_avx512 && avx512 > avx2 ? avx512 : avx2, avx2, Seconds(start),
              static_cast<double>(sink));
  return 0;
}
