// matmul: out[..., m, n] = op(a)[..., m, k] * op(b)[..., k, n], op transposing the last
// two axes under transpose_a / transpose_b, through Sgemm (sgemm.h: oneDNN's dnnl_sgemm or
// matmul primitive, or OpenBLAS's cblas_sgemm, whichever runs the product faster on one
// core). Batched (rank > 2) products go to SgemmBatched in one call: the matmul primitive
// runs attention's batches in one call, faster than a loop of sgemm
// (bench/gemm:batched_matmul_bench); the other backends loop over the batch.
//
// With a device thread pool (--threads_per_device, thread_pool.h) a large product is cut
// into blocks of output rows or columns, one single-threaded sgemm each, run over the
// pool; batched products spread whole batches instead. Each output element still sums
// over all of k in one sgemm, so the cut changes no sum's terms, only which call does it.
#include <algorithm>
#include <climits>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/thread_pool.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

constexpr char kKernel[] = "matmul";

// Work (multiply-adds) below which a part of a split product is not worth a helper's
// wake-up (~10 us on a condition variable): ~2^20 MACs run ~10-20 us on one AVX2 core.
constexpr int64_t kMinMacsPerPart = int64_t{1} << 20;
// Parts are cut at multiples of this many rows or columns, so each sgemm keeps whole
// micro-kernel tiles (the AVX2/AVX-512 sgemm tiles of OpenBLAS and oneDNN are multiples of
// 8 or 16 wide).
constexpr int64_t kSplitAlign = 16;

// One row-major sgemm, m x n of op(a) * op(b), a and b at their stored leading dimensions.
struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float* c;
  int ldc;

  // One BLAS thread per call, whichever backend (sgemm.h).
  void Call() const { Sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc); }
  // Rows [begin, end) of the output: rows of op(a), i.e. columns of a when transposed.
  Gemm Rows(int64_t begin, int64_t end) const {
    Gemm part = *this;
    part.m = end - begin;
    part.a = a + begin * (ta ? 1 : lda);
    part.c = c + begin * ldc;
    return part;
  }
  // Columns [begin, end) of the output: columns of op(b), i.e. rows of b when transposed.
  Gemm Columns(int64_t begin, int64_t end) const {
    Gemm part = *this;
    part.n = end - begin;
    part.b = b + begin * (tb ? ldb : 1);
    part.c = c + begin;
    return part;
  }
};

// Runs `gemm` over the current device pool, cut along its longer output side.
void SplitGemm(const Gemm& gemm) {
  const bool by_rows = gemm.m >= gemm.n;
  const int64_t length = by_rows ? gemm.m : gemm.n;
  const int64_t macs_per_line = (by_rows ? gemm.n : gemm.m) * gemm.k;
  const int64_t blocks = (length + kSplitAlign - 1) / kSplitAlign;
  const int64_t min_lines = (kMinMacsPerPart + macs_per_line - 1) / macs_per_line;
  const int64_t grain = (min_lines + kSplitAlign - 1) / kSplitAlign;
  ParallelFor(blocks, grain, [&](int64_t first, int64_t last) {
    const int64_t begin = first * kSplitAlign, end = std::min(last * kSplitAlign, length);
    (by_rows ? gemm.Rows(begin, end) : gemm.Columns(begin, end)).Call();
  });
}

}  // namespace

absl::Status MatMul(const KernelContext& context) {
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"a"}, {"b"}}, {{"out"}}));
  const Shape& a = context.inputs[0].shape;
  const Shape& b = context.inputs[1].shape;
  const Shape& out = context.outputs[0].shape;
  const AttrMap& attrs = AttrsOf(context);
  const bool ta = GetBoolAttr(attrs, "transpose_a", false);
  const bool tb = GetBoolAttr(attrs, "transpose_b", false);
  const int64_t r = a.rank();
  if (r < 2 || b.rank() != r) {
    return KernelError(kKernel, "inputs 'a' ", a.ToString(), " and 'b' ", b.ToString(),
                       " must have the same rank >= 2");
  }
  const int64_t m = a.dim(ta ? r - 1 : r - 2);
  const int64_t k = a.dim(ta ? r - 2 : r - 1);
  const int64_t n = b.dim(tb ? r - 2 : r - 1);
  if (b.dim(tb ? r - 1 : r - 2) != k) {
    return KernelError(kKernel, "inner dimensions differ: a ", a.ToString(),
                       " (transpose_a=", ta ? "true" : "false", ") has k=", k, ", b ", b.ToString(),
                       " (transpose_b=", tb ? "true" : "false",
                       ") has k=", b.dim(tb ? r - 1 : r - 2));
  }
  std::vector<int64_t> expected(a.dims().begin(), a.dims().end() - 2);
  int64_t batches = 1;
  for (int64_t axis = 0; axis < r - 2; ++axis) {
    if (b.dim(axis) != a.dim(axis)) {
      return KernelError(kKernel, "batch dimensions differ: a ", a.ToString(), " vs b ",
                         b.ToString());
    }
    batches *= a.dim(axis);
  }
  expected.push_back(m);
  expected.push_back(n);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", out, Shape(expected), "a's rows by b's columns"));
  if (std::max({m, n, k, a.dim(r - 1), b.dim(r - 1)}) > INT_MAX) {
    return KernelError(kKernel, "dimensions of a ", a.ToString(), " and b ", b.ToString(),
                       " exceed the BLAS limit of ", INT_MAX);
  }
  float* c = context.outputs[0].As<float>();
  if (m * n == 0 || batches == 0) return absl::OkStatus();
  if (k == 0) {  // An empty sum; BLAS would also need leading dimensions of at least 1.
    std::fill(c, c + batches * m * n, 0.0f);
    return absl::OkStatus();
  }
  const float* a_data = context.inputs[0].As<const float>();
  const float* b_data = context.inputs[1].As<const float>();
  // Row-major leading dimensions are the stored row lengths, transposed or not.
  const int lda = static_cast<int>(a.dim(r - 1));
  const int ldb = static_cast<int>(b.dim(r - 1));
  const Gemm whole{ta, tb, m, n, k, a_data, lda, b_data, ldb, c, static_cast<int>(n)};
  if (batches == 1) {
    SplitGemm(whole);
    return absl::OkStatus();
  }
  // Many batches (attention heads): whole batches per thread, no cut inside one.
  const int64_t grain = std::max<int64_t>(1, kMinMacsPerPart / std::max<int64_t>(1, m * n * k));
  ParallelFor(batches, grain, [&](int64_t first, int64_t last) {
    SgemmBatched(ta, tb, last - first, m, n, k, a_data + first * m * k, lda, m * k,
                 b_data + first * k * n, ldb, k * n, c + first * m * n, n, m * n);
  });
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
