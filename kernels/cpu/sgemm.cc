#include "kernels/cpu/sgemm.h"

#include <cblas.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "oneapi/dnnl/dnnl.h"

// Declared here as well as in OpenBLAS's cblas.h, so this file also compiles against a
// cblas.h from another BLAS (the link still needs OpenBLAS).
extern "C" void openblas_set_num_threads(int num_threads);

namespace oneflow {
namespace cpu {
namespace {

// What OF_SGEMM_BACKEND forces, read once: -1 none (choose per product), else a backend.
int ForcedBackend() {
  static const int forced = [] {
    const char* value = std::getenv("OF_SGEMM_BACKEND");
    if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return -1;
    if (std::strcmp(value, "openblas") == 0) return static_cast<int>(SgemmBackend::kOpenBlas);
    if (std::strcmp(value, "dnnl") == 0) return static_cast<int>(SgemmBackend::kDnnl);
    std::fprintf(stderr,
                 "[sgemm] ignoring OF_SGEMM_BACKEND=%s (valid: openblas, dnnl, auto)\n", value);
    return -1;
  }();
  return forced;
}

// Once per process, before the first OpenBLAS call: one OpenBLAS thread per call. A
// function-local static is initialized exactly once even when device threads race.
void UseOneOpenBlasThreadPerCall() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// Once per calling thread, before its first oneDNN call: OpenMP's thread count is a
// per-thread setting (the nthreads-var of the thread's implicit task), so this caps this
// thread's oneDNN calls at one thread without touching any other thread's.
void UseOneDnnlThreadOnThisThread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

void OpenBlasSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  UseOneOpenBlasThreadPerCall();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
}

// Multiply-adds from which dnnl_sgemm beats cblas_sgemm (see SgemmBackendFor).
constexpr int64_t kMinDnnlMacs = int64_t{1} << 20;

}  // namespace

const char* SgemmBackendName(SgemmBackend backend) {
  return backend == SgemmBackend::kDnnl ? "dnnl" : "openblas";
}

SgemmBackend SgemmBackendFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                             int64_t k) {
  const int forced = ForcedBackend();
  if (forced >= 0) return static_cast<SgemmBackend>(forced);
  // bench/gemm:dnnl_vs_openblas on one core (docs/kernels.md, "GEMM backends"): from
  // 2^20 multiply-adds up (128^3), dnnl_sgemm ran 1-19% (mostly 5-15%) faster than cblas_sgemm on the mlp
  // and gpt products in every form (NN, NT, TN), with one exception: a weight gradient
  // (TN) whose output is tall (m >= 2n) against a long k (k >= 2n), n not tiny (the gpt's
  // 1024x256 over k 1024: 0.94-1.07x over four runs, a tie; the mlp head's 1024x10 over
  // 256 still ran 2-4% faster on oneDNN). Below 2^20, oneDNN's fixed cost per call loses
  // (16^3 at 0.27x OpenBLAS's speed, 64^3 at 0.85x, 96^3 at 0.97x).
  if (m * n * k < kMinDnnlMacs) return SgemmBackend::kOpenBlas;
  if (transpose_a && !transpose_b && n >= 64 && m >= 2 * n && k >= 2 * n) {
    return SgemmBackend::kOpenBlas;
  }
  return SgemmBackend::kDnnl;
}

void SgemmWith(SgemmBackend backend, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc) {
  if (backend == SgemmBackend::kDnnl) {
    UseOneDnnlThreadOnThisThread();
    // dnnl_sgemm is row-major, like cblas with CblasRowMajor.
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                   ldc) == dnnl_success) {
      return;
    }
    // It fails on invalid arguments (ruled out by the caller) or when it cannot allocate
    // its packing buffers; OpenBLAS runs the product then.
  }
  OpenBlasSgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc) {
  SgemmWith(SgemmBackendFor(ta, tb, m, n, k), ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace cpu
}  // namespace oneflow
