// AVX-512 code paths chosen at run time. Internal to //kernels/cpu.
//
// The build targets x86-64-v3 (AVX2 and FMA), so code for AVX-512 is compiled function by
// function (OF_TARGET_AVX512) and only called where CpuHasAvx512(). Zen 4 runs 512-bit
// vectors as two 256-bit halves, so they do not add arithmetic per cycle; what they add
// are 32 registers, three-input logic (vpternlog: Philox's rounds, philox.h) and half the
// instructions per element in flight, which the exponential-bound loops of the
// cross-entropy are limited by (normalization_util.h).
//
// The environment variable ONEFLOW_CPU_AVX2_ONLY=1 makes CpuHasAvx512() false, so that
// tests run the AVX2 code on a CPU with AVX-512 too (conformance_avx2_test,
// philox_avx2_test).
#ifndef KERNELS_CPU_CPU_FEATURES_H_
#define KERNELS_CPU_CPU_FEATURES_H_

#include <cstdlib>
#include <cstring>

#if defined(__AVX2__) && defined(__GNUC__)
#define OF_AVX512_CODE 1
#define OF_TARGET_AVX512 __attribute__((target("avx512f,avx512vl")))
#define OF_TARGET_AVX512_INLINE __attribute__((target("avx512f,avx512vl"), always_inline))
#endif

namespace oneflow {
namespace cpu {

// Whether the AVX-512 code paths run: the CPU has AVX-512F and AVX-512VL, and
// ONEFLOW_CPU_AVX2_ONLY is not set to 1.
inline bool CpuHasAvx512() {
#if defined(OF_AVX512_CODE)
  static const bool has = [] {
    const char* avx2_only = std::getenv("ONEFLOW_CPU_AVX2_ONLY");
    if (avx2_only != nullptr && std::strcmp(avx2_only, "1") == 0) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_CPU_FEATURES_H_
