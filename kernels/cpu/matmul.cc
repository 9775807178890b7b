// matmul: out[..., m, n] = op(a)[..., m, k] * op(b)[..., k, n], op transposing the last
// two axes under transpose_a / transpose_b, through OpenBLAS's cblas_sgemm. Batched
// (rank > 2) products loop over the batch: the batches of attention are few and large
// enough that one sgemm each costs little over a batched call, and OpenBLAS 0.3.21 has
// no strided-batch GEMM.
#include <cblas.h>

#include <algorithm>
#include <climits>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/status.h"

// Declared here as well as in OpenBLAS's cblas.h, so this file also compiles against a
// cblas.h from another BLAS (the link still needs OpenBLAS).
extern "C" void openblas_set_num_threads(int num_threads);

namespace oneflow {
namespace cpu {
namespace {

constexpr char kKernel[] = "matmul";

// Once per process, before the first sgemm: one BLAS thread per call (see registry.h).
// A function-local static is initialized exactly once even when device threads race.
void UseOneBlasThreadPerCall() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
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
  UseOneBlasThreadPerCall();
  const float* a_data = context.inputs[0].As<const float>();
  const float* b_data = context.inputs[1].As<const float>();
  // Row-major leading dimensions are the stored row lengths, transposed or not.
  const int lda = static_cast<int>(a.dim(r - 1));
  const int ldb = static_cast<int>(b.dim(r - 1));
  for (int64_t batch = 0; batch < batches; ++batch) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f,
                a_data + batch * m * k, lda, b_data + batch * k * n, ldb, 0.0f, c + batch * m * n,
                static_cast<int>(n));
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
