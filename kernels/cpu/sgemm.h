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

#include "oneflow_core/dtype.h"

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

// ---------------------------------------------------------------------------------------
// GEMM with an epilogue (the fused_matmul_bias kernel): c = op(a) . op(b) + bias[j] on
// every row, then max(0, .) when relu. Two routes:
//
//   kDnnlPostOps:  oneDNN's matmul primitive with a bias argument ([1, n]) and, for relu,
//                  an eltwise post-op: the epilogue is applied to each output tile while
//                  it is still in registers. Cached per thread and shape like Sgemm's
//                  primitives (the key includes the epilogue).
//   kSeparatePass: Sgemm (its own backend choice, above), then one vectorized pass adding
//                  bias and clamping over c, right after the product, while c is still
//                  in cache (a 256x1024 output is 1 MiB, within a 2 MiB L2).
//
// EpilogueRouteFor has the rule and its measurements (bench/gemm:fused_matmul_bias_bench):
// the epilogue keeps the GEMM Sgemm would run (post-ops only where that is the primitive),
// so SgemmBiasRelu equals Sgemm then BiasReluInPlace bit for bit.
// OF_SGEMM_BACKEND applies: openblas or dnnl force kSeparatePass (on that backend),
// dnnl_matmul forces kDnnlPostOps. A primitive oneDNN refuses or fails runs
// kSeparatePass instead. relu maps NaN to 0 on both routes, as the relu kernel does.

enum class EpilogueRoute {
  kSeparatePass,  // Sgemm, then a pass over c
  kDnnlPostOps,   // oneDNN's matmul primitive with bias and post-op
};

// "separate_pass" or "dnnl_post_ops".
const char* EpilogueRouteName(EpilogueRoute route);

// The route SgemmBiasRelu takes for this product (after OF_SGEMM_BACKEND).
EpilogueRoute EpilogueRouteFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                               int64_t k);

// c[m, n] = op(a) . op(b) + bias (bias[j] added to column j of every row; bias may be
// null: nothing added), then max(0, .) over c when relu. Sgemm's layout and limits, except
// that k may be 0 (c is then the epilogue of zeros; a and b are not read). Without bias
// and relu this is Sgemm.
void SgemmBiasRelu(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                   const float* a, int64_t lda, const float* b, int64_t ldb, const float* bias,
                   bool relu, float* c, int64_t ldc);

// The same through one named route (tests and benchmarks); kDnnlPostOps still falls back
// to kSeparatePass when oneDNN refuses the primitive.
void SgemmBiasReluWith(EpilogueRoute route, bool transpose_a, bool transpose_b, int64_t m,
                       int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                       int64_t ldb, const float* bias, bool relu, float* c, int64_t ldc);

// ---------------------------------------------------------------------------------------
// bf16 products (the matmul kernels under --precision=bf16, compiler/passes/
// precision_pass.h): `batch` products of SgemmBatched's form on bf16 operands, summed in
// fp32 into the f32 c, then bias [n] (may be null) added to every row and max(0, .) when
// relu. Strides and leading dimensions count elements; c's batches are dense (stride m *
// ldc). Two routes, the same values up to the order of fp32 additions:
//
//   kDnnlBf16:     oneDNN's bf16 matmul primitive (AVX-512 BF16 or AMX where the CPU has
//                  them; oneDNN needs at least AVX-512 for bf16), cached per thread and
//                  shape with Sgemm's primitives.
//   kRoundedSgemm: where oneDNN has no bf16 primitive for this CPU: the operands widened
//                  to f32 (exact) and multiplied by SgemmBatched. A product of two bf16
//                  values is exact in fp32, so only the summation order differs; it runs
//                  at fp32's speed, plus the conversions. `--precision=bf16` is refused on
//                  such CPUs (compiler/precision.h); tests reach this route through
//                  CompileOptions to check bf16's numerics on any machine.
enum class BF16MatmulRoute { kDnnlBf16, kRoundedSgemm };

// Whether oneDNN runs bf16 products on this CPU (probed once, on a 2x2 product).
bool Bf16MatmulUsesDnnl();

BF16MatmulRoute Bf16MatmulBatched(bool transpose_a, bool transpose_b, int64_t batch, int64_t m,
                                  int64_t n, int64_t k, const BFloat16* a, int64_t lda,
                                  int64_t stride_a, const BFloat16* b, int64_t ldb,
                                  int64_t stride_b, const float* bias, bool relu, float* c,
                                  int64_t ldc);

// The epilogue alone, in place over rows of c: c[i, j] += bias[j] (bias may be null),
// then max(0, .) when relu. kSeparatePass's second half.
void BiasReluInPlace(int64_t m, int64_t n, const float* bias, bool relu, float* c,
                     int64_t ldc);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_SGEMM_H_
