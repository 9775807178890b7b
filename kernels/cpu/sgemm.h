// One row-major single-precision GEMM on the calling thread, through the backend that is
// fastest for it on one core: oneDNN (Debian's libdnnl 2.6, two ways in, below) or OpenBLAS's
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
// oneDNN has two ways in: dnnl_sgemm, a BLAS-like call, and its matmul primitive (the
// brgemm-based implementation on AVX-512), which has to be created for each shape but
// then runs some forms faster, and takes a whole batch in one call. Sgemm creates a
// primitive the first time a thread runs a shape routed to it and keeps it in a cache of
// that thread (thread_local: primitives are not shared between device threads; a cache
// holds at most 256 shapes, cleared whole when full). Routed to the primitive:
// batched products with an untransposed a (attention's scores and contexts), the
// untransposed-by-transposed form with a short m (the mlp's input gradients) and the
// transposed-by-untransposed form with n < 16 (the mlp head's weight gradient); measured
// in docs/kernels.md, "GEMM backends".
//
// OF_SGEMM_BACKEND=openblas (or =dnnl, =dnnl_matmul) in the environment, read once at the
// first call, forces one backend for every product (for A/B measurements); unset or
// "auto" lets SgemmBackendFor choose.
#ifndef KERNELS_CPU_SGEMM_H_
#define KERNELS_CPU_SGEMM_H_

#include <cstdint>

namespace oneflow {
namespace cpu {

enum class SgemmBackend {
  kOpenBlas,   // cblas_sgemm, one call per batch
  kDnnl,       // dnnl_sgemm, one call per batch
  kDnnlMatmul  // oneDNN's matmul primitive, cached per shape and thread, one call per batch set
};

// "openblas", "dnnl" or "dnnl_matmul".
const char* SgemmBackendName(SgemmBackend backend);

// The backend Sgemm (batch 1) or SgemmBatched uses for this product (after
// OF_SGEMM_BACKEND).
SgemmBackend SgemmBackendFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                             int64_t k, int64_t batch = 1);

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

// `batch` products of Sgemm's form: c + i * stride_c = op(a + i * stride_a) . op(b + i *
// stride_b) for i < batch (strides in floats). Each product sums its k terms in one call,
// as Sgemm does; the backends differ only in float rounding. Requires batch >= 1 and
// Sgemm's requirements for each product.
void SgemmBatched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n,
                  int64_t k, const float* a, int64_t lda, int64_t stride_a, const float* b,
                  int64_t ldb, int64_t stride_b, float* c, int64_t ldc, int64_t stride_c);

// The same through one named backend (tests and benchmarks).
void SgemmBatchedWith(SgemmBackend backend, bool transpose_a, bool transpose_b, int64_t batch,
                      int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                      int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c,
                      int64_t ldc, int64_t stride_c);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_SGEMM_H_
