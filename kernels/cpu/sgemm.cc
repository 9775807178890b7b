#include "kernels/cpu/sgemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

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
    if (std::strcmp(value, "dnnl_matmul") == 0) {
      return static_cast<int>(SgemmBackend::kDnnlMatmul);
    }
    std::fprintf(stderr,
                 "[sgemm] ignoring OF_SGEMM_BACKEND=%s (valid: openblas, dnnl, dnnl_matmul, "
                 "auto)\n",
                 value);
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

// The matmul primitives of one thread, by everything that shapes one: the transposes, the
// batch, m, n, k, the leading dimensions, the batch strides and the epilogue (a bias
// argument, a relu post-op). A device runs a few dozen shapes (the gpt's step: ~20); a
// thread past this many drops its whole cache and starts again rather than keep
// primitives of shapes it may never run again.
constexpr size_t kMaxCachedPrimitives = 256;

// The last entry is 1 for bf16 operands (a and b; c and the bias stay f32).
using PrimitiveKey = std::array<int64_t, 14>;

// One primitive with its memory objects (a, b, c and, with an epilogue bias, the bias),
// whose data handles each call repoints.
class MatmulPrimitive {
 public:
  MatmulPrimitive() = default;
  MatmulPrimitive(const MatmulPrimitive&) = delete;
  MatmulPrimitive& operator=(const MatmulPrimitive&) = delete;
  ~MatmulPrimitive() {
    for (dnnl_memory_t memory : memory_) {
      if (memory != nullptr) dnnl_memory_destroy(memory);
    }
    if (primitive_ != nullptr) dnnl_primitive_destroy(primitive_);
  }

  // Creates the primitive for `key`'s product on `engine`; false if oneDNN refuses it.
  bool Create(const PrimitiveKey& key, dnnl_engine_t engine) {
    const auto [ta, tb, batch, m, n, k, lda, ldb, ldc, stride_a, stride_b, has_bias, relu, bf16] =
        key;
    const dnnl_data_type_t operand_type = bf16 ? dnnl_bf16 : dnnl_f32;
    const int64_t stride_c = m * ldc;  // c's batches are dense (DnnlMatmul's contract)
    dnnl_memory_desc_t a_md, b_md, c_md, bias_md;
    const int ndims = batch > 1 ? 3 : 2;
    // Logical [batch,] m x k, k x n, m x n; the strides say how each is stored.
    const dnnl_dims_t a_dims = {batch, m, k}, b_dims = {batch, k, n}, c_dims = {batch, m, n};
    const dnnl_dims_t a_strides = {stride_a, ta ? 1 : lda, ta ? lda : 1};
    const dnnl_dims_t b_strides = {stride_b, tb ? 1 : ldb, tb ? ldb : 1};
    const dnnl_dims_t c_strides = {stride_c, ldc, 1};
    // The bias broadcasts over the batch and the rows: [1, 1, n], dense.
    const dnnl_dims_t bias_dims = {1, 1, n}, bias_strides = {n, n, 1};
    const int skip = 3 - ndims;  // 2-D descriptors drop the batch axis
    if (dnnl_memory_desc_init_by_strides(&a_md, ndims, a_dims + skip, operand_type,
                                         a_strides + skip) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&b_md, ndims, b_dims + skip, operand_type,
                                         b_strides + skip) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&c_md, ndims, c_dims + skip, dnnl_f32,
                                         c_strides + skip) != dnnl_success ||
        (has_bias && dnnl_memory_desc_init_by_strides(&bias_md, ndims, bias_dims + skip,
                                                      dnnl_f32, bias_strides + skip) !=
                         dnnl_success)) {
      return false;
    }
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &a_md, &b_md, has_bias ? &bias_md : nullptr, &c_md) !=
        dnnl_success) {
      return false;
    }
    // relu as an eltwise post-op on the primitive's attributes: dst = 1.0 * relu(dst),
    // applied to each tile of the output before it is stored (alpha 0: the negative slope).
    dnnl_primitive_attr_t attr = nullptr;
    if (relu) {
      dnnl_post_ops_t post_ops = nullptr;
      if (dnnl_post_ops_create(&post_ops) != dnnl_success) return false;
      const bool made =
          dnnl_post_ops_append_eltwise(post_ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) ==
              dnnl_success &&
          dnnl_primitive_attr_create(&attr) == dnnl_success &&
          dnnl_primitive_attr_set_post_ops(attr, post_ops) == dnnl_success;
      dnnl_post_ops_destroy(post_ops);  // the attributes keep their own copy
      if (!made) {
        if (attr != nullptr) dnnl_primitive_attr_destroy(attr);
        return false;
      }
    }
    dnnl_primitive_desc_t primitive_desc;
    const dnnl_status_t described =
        dnnl_primitive_desc_create(&primitive_desc, &desc, attr, engine, nullptr);
    if (attr != nullptr) dnnl_primitive_attr_destroy(attr);
    if (described != dnnl_success) return false;
    const dnnl_status_t created = dnnl_primitive_create(&primitive_, primitive_desc);
    dnnl_primitive_desc_destroy(primitive_desc);
    if (created != dnnl_success) {
      primitive_ = nullptr;
      return false;
    }
    const dnnl_memory_desc_t* descs[4] = {&a_md, &b_md, &c_md, &bias_md};
    for (int i = 0; i < (has_bias ? 4 : 3); ++i) {
      if (dnnl_memory_create(&memory_[i], descs[i], engine, DNNL_MEMORY_NONE) != dnnl_success) {
        memory_[i] = nullptr;
        return false;
      }
    }
    return true;
  }

  // Runs the product on a, b, c (and bias, if the primitive was made with one); false if
  // oneDNN failed (c is then to be recomputed).
  bool Run(dnnl_stream_t stream, const void* a, const void* b, const float* bias,
           float* c) {
    const bool has_bias = memory_[3] != nullptr;
    // oneDNN takes non-const handles but only reads a primitive's sources.
    if (dnnl_memory_set_data_handle_v2(memory_[0], const_cast<void*>(a), stream) !=
            dnnl_success ||
        dnnl_memory_set_data_handle_v2(memory_[1], const_cast<void*>(b), stream) !=
            dnnl_success ||
        dnnl_memory_set_data_handle_v2(memory_[2], c, stream) != dnnl_success ||
        (has_bias && dnnl_memory_set_data_handle_v2(memory_[3], const_cast<float*>(bias),
                                                    stream) != dnnl_success)) {
      return false;
    }
    const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memory_[0]},
                                     {DNNL_ARG_WEIGHTS, memory_[1]},
                                     {DNNL_ARG_DST, memory_[2]},
                                     {DNNL_ARG_BIAS, memory_[3]}};
    return dnnl_primitive_execute(primitive_, stream, has_bias ? 4 : 3, args) ==
               dnnl_success &&
           dnnl_stream_wait(stream) == dnnl_success;
  }

 private:
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_t memory_[4] = {nullptr, nullptr, nullptr, nullptr};
};

// This thread's engine, stream and primitives. The engine and stream live as long as the
// thread; a thread that never routes a product here creates none.
class ThreadPrimitives {
 public:
  ~ThreadPrimitives() {
    primitives_.clear();  // before the engine they were created on
    if (stream_ != nullptr) dnnl_stream_destroy(stream_);
    if (engine_ != nullptr) dnnl_engine_destroy(engine_);
  }

  // The primitive for `key`, created on first use; null if oneDNN cannot run it.
  MatmulPrimitive* Find(const PrimitiveKey& key) {
    if (engine_ == nullptr) {
      if (dnnl_engine_create(&engine_, dnnl_cpu, 0) != dnnl_success) {
        engine_ = nullptr;
        return nullptr;
      }
      if (dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags) != dnnl_success) {
        stream_ = nullptr;
        return nullptr;
      }
    }
    if (stream_ == nullptr) return nullptr;
    auto found = primitives_.find(key);
    if (found != primitives_.end()) return found->second.get();
    if (primitives_.size() >= kMaxCachedPrimitives) primitives_.clear();
    auto primitive = std::make_unique<MatmulPrimitive>();
    if (!primitive->Create(key, engine_)) primitive.reset();  // remembered as refused
    return primitives_.emplace(key, std::move(primitive)).first->second.get();
  }

  dnnl_stream_t stream() const { return stream_; }

 private:
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::map<PrimitiveKey, std::unique_ptr<MatmulPrimitive>> primitives_;
};

// The batch through the matmul primitive, with the epilogue (bias [n] added to every row
// of every batch when not null, then relu when set); false if oneDNN refused the shape or
// failed (c is then for the caller to compute). c's batches must be dense (stride_c ==
// m * ldc).
bool DnnlMatmulOf(bool bf16, bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                  int64_t stride_b, const float* bias, bool relu, float* c, int64_t ldc) {
  UseOneDnnlThreadOnThisThread();
  thread_local ThreadPrimitives primitives;
  const PrimitiveKey key = {ta,  tb,  batch, m, n, k, lda, ldb, ldc,
                            batch > 1 ? stride_a : 0, batch > 1 ? stride_b : 0,
                            bias != nullptr, relu, bf16};
  MatmulPrimitive* primitive = primitives.Find(key);
  return primitive != nullptr && primitive->Run(primitives.stream(), a, b, bias, c);
}

bool DnnlMatmul(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                int64_t stride_b, const float* bias, bool relu, float* c, int64_t ldc) {
  return DnnlMatmulOf(/*bf16=*/false, ta, tb, batch, m, n, k, a, lda, stride_a, b, ldb, stride_b, bias,
                      relu, c, ldc);
}

// Rows of the epilogue, instantiated per (bias, relu) so the inner loop has no branch and
// vectorizes (8 floats a step with the project's x86-64-v3: an add, and a compare and a
// mask for relu; -O3, see BUILD.bazel). relu is `value > 0 ? value : 0`, which maps NaN
// to 0 as oneDNN's relu post-op, the relu kernel and the reference's relu do, so the
// route (and fusing at all) does not change a NaN's fate.
template <bool kBias, bool kRelu>
void BiasReluRows(int64_t m, int64_t n, const float* __restrict bias, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* __restrict row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      float value = row[j];
      if constexpr (kBias) value += bias[j];
      if constexpr (kRelu) value = value > 0.0f ? value : 0.0f;
      row[j] = value;
    }
  }
}

}  // namespace

const char* SgemmBackendName(SgemmBackend backend) {
  switch (backend) {
    case SgemmBackend::kOpenBlas: return "openblas";
    case SgemmBackend::kDnnl: return "dnnl";
    case SgemmBackend::kDnnlMatmul: return "dnnl_matmul";
  }
  return "?";
}

SgemmBackend SgemmBackendFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                             int64_t k, int64_t batch) {
  const int forced = ForcedBackend();
  if (forced >= 0) return static_cast<SgemmBackend>(forced);
  // bench/gemm:dnnl_vs_openblas on one core (docs/kernels.md, "GEMM backends"): from
  // 2^20 multiply-adds up (128^3), dnnl_sgemm ran 1-19% (mostly 5-15%) faster than cblas_sgemm on the mlp
  // and gpt products in every form (NN, NT, TN), with one exception: a weight gradient
  // (TN) whose output is tall (m >= 2n) against a long k (k >= 2n), n at least 128 (the
  // gpt's 1024x256 over k 1024: 0.94-1.07x over four runs, a tie; attention's dk and dv,
  // 128x64 over k 128 per batch, ran ~1.2x faster on oneDNN: batched_matmul_bench).
  // Below 2^20, oneDNN's fixed cost per call loses (16^3 at 0.27x OpenBLAS's speed, 64^3
  // at 0.85x, 96^3 at 0.97x).
  if (m * n * k < kMinDnnlMacs) return SgemmBackend::kOpenBlas;
  // The matmul primitive (docs/kernels.md, "GEMM backends"): attention's batched products
  // with an untransposed a ran 2-13% faster than a loop of dnnl_sgemm (its dk/dv, a
  // transposed, did not); of single products, the untransposed-by-transposed form with m
  // below n (the mlp's input gradients, 256 x 1024 over k 1024 and over k 10) 10-17%;
  // the mlp head's weight gradient (a transposed, n < 16) 12%.
  if (!transpose_a && batch > 1) return SgemmBackend::kDnnlMatmul;
  if (!transpose_a && transpose_b && 2 * m <= n) return SgemmBackend::kDnnlMatmul;
  if (transpose_a && !transpose_b && n < 16) return SgemmBackend::kDnnlMatmul;
  if (transpose_a && !transpose_b && n >= 128 && m >= 2 * n && k >= 2 * n) {
    return SgemmBackend::kOpenBlas;
  }
  return SgemmBackend::kDnnl;
}

void SgemmWith(SgemmBackend backend, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc) {
  if (backend == SgemmBackend::kDnnlMatmul) {
    if (DnnlMatmul(ta, tb, 1, m, n, k, a, lda, 0, b, ldb, 0, nullptr, false, c, ldc)) return;
    backend = SgemmBackend::kDnnl;  // refused: dnnl_sgemm
  }
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

void SgemmBatchedWith(SgemmBackend backend, bool ta, bool tb, int64_t batch, int64_t m,
                      int64_t n, int64_t k, const float* a, int64_t lda, int64_t stride_a,
                      const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                      int64_t stride_c) {
  if (backend == SgemmBackend::kDnnlMatmul) {
    if ((batch == 1 || stride_c == m * ldc) &&
        DnnlMatmul(ta, tb, batch, m, n, k, a, lda, stride_a, b, ldb, stride_b, nullptr, false,
                   c, ldc)) {
      return;
    }
    // Refused (or c's batches not dense): dnnl_sgemm per batch.
    backend = SgemmBackend::kDnnl;
  }
  for (int64_t i = 0; i < batch; ++i) {
    SgemmWith(backend, ta, tb, m, n, k, a + i * stride_a, lda, b + i * stride_b, ldb,
              c + i * stride_c, ldc);
  }
}

void SgemmBatched(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                  int64_t stride_b, float* c, int64_t ldc, int64_t stride_c) {
  SgemmBatchedWith(SgemmBackendFor(ta, tb, m, n, k, batch), ta, tb, batch, m, n, k, a, lda,
                   stride_a, b, ldb, stride_b, c, ldc, stride_c);
}

const char* EpilogueRouteName(EpilogueRoute route) {
  switch (route) {
    case EpilogueRoute::kSeparatePass: return "separate_pass";
    case EpilogueRoute::kDnnlPostOps: return "dnnl_post_ops";
  }
  return "?";
}

EpilogueRoute EpilogueRouteFor(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                               int64_t k) {
  const int forced = ForcedBackend();
  if (forced >= 0) {
    return forced == static_cast<int>(SgemmBackend::kDnnlMatmul) ? EpilogueRoute::kDnnlPostOps
                                                                  : EpilogueRoute::kSeparatePass;
  }
  // The epilogue never changes which GEMM runs: the primitive with post-ops where the plain
  // route is the primitive (the NT form with m <= n / 2, as the mlp's layers with w stored
  // [out, in]; the TN form with n < 16), the plain route and the pass everywhere else. Then fused_matmul_bias equals matmul -> bias_add -> relu
  // bit for bit (the post-ops add the bias to the finished product: the primitive's
  // result plus the pass, bit for bit; sgemm_test), and a product cut over a pool rounds
  // as its unfused cut does.
  //
  // Measured with bench/gemm:fused_matmul_bias_bench on one core (Zen 4, docs/kernels.md,
  // "Fused epilogues"), paired medians: against dnnl_sgemm plus the pass, the primitive
  // with post-ops was faster where one side of the output is at most 256 and k >= n (the
  // mlp forward 256x1024 over k 1024, 0.984-0.991x with relu; 1024x256 over k 1024,
  // 0.98x; 256x64 over k 1024, 0.91x) and slower elsewhere (the gpt's up projection
  // 1024x1024 over k 256, 1.01-1.04x; 512x512 over k 2048, 1.02-1.03x; 2048x1024 over k
  // 1024, 1.01x; the mlp head 256x10 over k 1024, 1.47x). It is not used where it won:
  // brgemm sums in another order than dnnl_sgemm (largest error 2.9e-7 against 1.4e-7 of
  // sum |a b| on 64x512 over k 512), and six training steps of the benchmark mlp carried
  // that to 1.5e-5-5.8e-5 relative in the loss, past the 1e-5 to which the fused and the
  // threaded runs are held to the unfused one-thread losses (tests/actors:
  // epilogue_fusion_test, threads_per_device_test). 1% on the mlp's forward layers did not
  // seem worth results that depend on fusion and on the thread count.
  const SgemmBackend plain = SgemmBackendFor(transpose_a, transpose_b, m, n, k);
  if (plain == SgemmBackend::kDnnlMatmul) return EpilogueRoute::kDnnlPostOps;
  return EpilogueRoute::kSeparatePass;
}

void BiasReluInPlace(int64_t m, int64_t n, const float* bias, bool relu, float* c,
                     int64_t ldc) {
  if (bias != nullptr) {
    relu ? BiasReluRows<true, true>(m, n, bias, c, ldc)
         : BiasReluRows<true, false>(m, n, bias, c, ldc);
  } else if (relu) {
    BiasReluRows<false, true>(m, n, bias, c, ldc);
  }
}

void SgemmBiasReluWith(EpilogueRoute route, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t lda, const float* b, int64_t ldb,
                       const float* bias, bool relu, float* c, int64_t ldc) {
  if (k == 0) {  // An empty sum: the epilogue of zeros (BLAS would not take k = 0 anyway).
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    BiasReluInPlace(m, n, bias, relu, c, ldc);
    return;
  }
  if (route == EpilogueRoute::kDnnlPostOps && (bias != nullptr || relu) &&
      DnnlMatmul(ta, tb, 1, m, n, k, a, lda, 0, b, ldb, 0, bias, relu, c, ldc)) {
    return;
  }
  // kSeparatePass, or the primitive was refused or failed (it overwrites c whole: beta 0).
  Sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  BiasReluInPlace(m, n, bias, relu, c, ldc);
}

void SgemmBiasRelu(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const float* b, int64_t ldb, const float* bias, bool relu,
                   float* c, int64_t ldc) {
  SgemmBiasReluWith(EpilogueRouteFor(ta, tb, m, n, k), ta, tb, m, n, k, a, lda, b, ldb, bias,
                    relu, c, ldc);
}

namespace {

// The elements from the first to the last of `batch` row-major operands of `rows` x `cols`
// at leading dimension `ld` and batch stride `stride`.
int64_t OperandSpan(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

}  // namespace

bool Bf16MatmulUsesDnnl() {
  static const bool dnnl = [] {
    const BFloat16 one = ToBFloat16(1.0f);
    const BFloat16 a[4] = {one, one, one, one}, b[4] = {one, one, one, one};
    float c[4] = {0, 0, 0, 0};
    return DnnlMatmulOf(/*bf16=*/true, false, false, 1, 2, 2, 2, a, 2, 4, b, 2, 4, nullptr, false, c, 2) &&
           c[0] == 2.0f && c[3] == 2.0f;
  }();
  return dnnl;
}

BF16MatmulRoute Bf16MatmulBatched(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                                  const BFloat16* a, int64_t lda, int64_t stride_a, const BFloat16* b,
                                  int64_t ldb, int64_t stride_b, const float* bias, bool relu, float* c,
                                  int64_t ldc) {
  if (Bf16MatmulUsesDnnl() && DnnlMatmulOf(/*bf16=*/true, ta, tb, batch, m, n, k, a, lda, stride_a, b, ldb,
                                           stride_b, bias, relu, c, ldc)) {
    return BF16MatmulRoute::kDnnlBf16;
  }
  // The rounded operands widened back (exactly) and multiplied in fp32.
  thread_local std::vector<float> a32, b32;
  const int64_t a_span = OperandSpan(batch, stride_a, ta ? k : m, ta ? m : k, lda);
  const int64_t b_span = OperandSpan(batch, stride_b, tb ? n : k, tb ? k : n, ldb);
  a32.resize(static_cast<size_t>(a_span));
  b32.resize(static_cast<size_t>(b_span));
  ConvertToFloat(a, a_span, a32.data());
  ConvertToFloat(b, b_span, b32.data());
  SgemmBatched(ta, tb, batch, m, n, k, a32.data(), lda, stride_a, b32.data(), ldb, stride_b, c, ldc, m * ldc);
  if (bias != nullptr || relu) BiasReluInPlace(batch * m, n, bias, relu, c, ldc);
  return BF16MatmulRoute::kRoundedSgemm;
}

}  // namespace cpu
}  // namespace oneflow
