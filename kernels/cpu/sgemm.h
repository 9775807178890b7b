// One row-major single-precision GEMM on the calling thread, through the backend that is
// fastest for it on one core: oneDNN's dnnl_sgemm (Debian's libdnnl 2.6) or OpenBLAS's
// cblas_sgemm (0.3.21, on the core //kernels/cpu:blas_core settles). Measured on the
// shapes of the mlp and gpt benchmarks with bench/gemm:dnnl_vs_openblas (docs/kernels.md,
// "GEMM backends"): oneDNN ran 1-19% (mostly 5-15%) faster on the products of the mlp and gpt steps and
// on squares from 128^3 up; OpenBLAS was faster below ~2^20 multiply-adds (oneDNN's fixed
// cost per call) and as fast on weight gradients (TN) with a tall output and a long k. So
// those go to OpenBLAS, everything else to oneDNN (SgemmBackendFor has the rule); a
// product dnnl_sgemm refuses falls back to OpenBLAS.
//
// Threads: each call runs on the calling thread only. OpenBLAS is switched to one thread
// per call once per process (openblas_set_num_threads(1)); Debian's oneDNN is built with
// OpenMP and would use omp_get_max_threads() threads, so every thread that calls Sgemm sets
// its own OpenMP thread count to 1 (omp_set_num_threads(1), a per-thread setting) before
// its first oneDNN call. No OpenMP team is ever started; a device that wants more cores
// cuts the product over its own pool (thread_pool.h, matmul.cc).
//
// OF_SGEMM_BACKEND=openblas (or =dnnl) in the environment, read once at the first call,
// forces one backend for every product (for A/B measurements); unset or "auto" lets
// SgemmBackendFor choose.
#ifndef KERNELS_CPU_SGEMM_H_
#define KERNELS_CPU_SGEMM_H_

#include <cstdint>

namespace oneflow {
namespace cpu {

enum class SgemmBackend { kOpenBlas, kDnnl };

// "openblas" or "dnnl".
const char* SgemmBackendName(SgemmBackend backend);

// The backend Sgemm uses for this product (after OF_SGEMM_BACKEND).
SgemmBackend SgemmBackendFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                             int64_t k);

// c[m, n] = op(a)[m, k] . op(b)[k, n] (alpha 1, beta 0: c is overwritten), row-major, op
// transposing when transpose_a / transpose_b; lda, ldb, ldc are the stored row lengths.
// Requires m, n, k >= 1 and every dimension and leading dimension <= INT_MAX (the cblas
// limit; the caller checks).
void Sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// The same product through one named backend (tests and benchmarks).
void SgemmWith(SgemmBackend backend, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
               int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_SGEMM_H_
