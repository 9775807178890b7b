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
//
// fused_matmul_bias: matmul's product plus bias[j] on every output row, then max(0, .)
// when relu, through SgemmBiasRelu (sgemm.h): the epilogue runs inside oneDNN's matmul
// primitive or as a pass over each part of c right after its product, while that part is
// still in cache, instead of bias_add's and relu's two passes over the whole output. It
// is cut over the pool as matmul is; a column block takes the bias from its first column.
//
// bf16 mixed precision (--precision=bf16, compiler/passes/precision_pass.h): an op with
// the attribute compute_dtype="bf16" rounds a and b to bf16 (round to nearest even, as
// ConvertToBFloat16) into this thread's scratch buffers and multiplies them through
// oneDNN's bf16 matmul primitive (Bf16MatmulBatched, sgemm.h; on a CPU without AVX-512,
// the rounded operands through fp32 Sgemm) with fp32 accumulation into the f32 output,
// the bias and relu applied after the product. A single product runs as one
// call; batches spread whole over the device pool as in fp32. compute_dtype="f32" (or
// none) is the fp32 path; any other value is an error naming it.
#include <algorithm>
#include <climits>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/thread_pool.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

constexpr char kMatMul[] = "matmul";
constexpr char kFusedMatMulBias[] = "fused_matmul_bias";

// Work (multiply-adds) below which a part of a split product is not worth a helper's
// wake-up (~10 us on a condition variable): ~2^20 MACs run ~10-20 us on one AVX2 core.
constexpr int64_t kMinMacsPerPart = int64_t{1} << 20;
// Parts are cut at multiples of this many rows or columns, so each sgemm keeps whole
// micro-kernel tiles (the AVX2/AVX-512 sgemm tiles of OpenBLAS and oneDNN are multiples of
// 8 or 16 wide).
constexpr int64_t kSplitAlign = 16;

// One row-major sgemm, m x n of op(a) * op(b), a and b at their stored leading dimensions,
// with an epilogue when bias is set or relu (fused_matmul_bias).
struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float* c;
  int ldc;
  const float* bias = nullptr;  // [n], added to every row
  bool relu = false;

  // One BLAS thread per call, whichever backend (sgemm.h).
  void Call() const {
    if (bias == nullptr && !relu) {
      Sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    } else {
      SgemmBiasRelu(ta, tb, m, n, k, a, lda, b, ldb, bias, relu, c, ldc);
    }
  }
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
    if (bias != nullptr) part.bias = bias + begin;
    return part;
  }
};

// Runs `gemm` over the device's `pool`, cut along its longer output side.
void SplitGemm(KernelThreadPool* pool, const Gemm& gemm) {
  const bool by_rows = gemm.m >= gemm.n;
  const int64_t length = by_rows ? gemm.m : gemm.n;
  const int64_t macs_per_line = (by_rows ? gemm.n : gemm.m) * gemm.k;
  const int64_t blocks = (length + kSplitAlign - 1) / kSplitAlign;
  const int64_t min_lines = (kMinMacsPerPart + macs_per_line - 1) / macs_per_line;
  const int64_t grain = (min_lines + kSplitAlign - 1) / kSplitAlign;
  ParallelFor(pool, blocks, grain, [&](int64_t first, int64_t last) {
    const int64_t begin = first * kSplitAlign, end = std::min(last * kSplitAlign, length);
    (by_rows ? gemm.Rows(begin, end) : gemm.Columns(begin, end)).Call();
  });
}

// The checked dimensions of a matmul-shaped product: inputs 0 and 1 (a, b) and output 0.
struct MatMulDims {
  bool ta, tb;
  int64_t batches, m, n, k;
  int lda, ldb;  // the stored row lengths of a and b (their row-major leading dimensions)
};

// Checks a, b and out of `kernel` (matmul's rules: same rank >= 2, equal batch
// dimensions and inner dimension, out [..., m, n], dimensions within the BLAS limit).
absl::StatusOr<MatMulDims> CheckMatMulShapes(absl::string_view kernel,
                                             const KernelContext& context) {
  const Shape& a = context.inputs[0].shape;
  const Shape& b = context.inputs[1].shape;
  const Shape& out = context.outputs[0].shape;
  const AttrMap& attrs = AttrsOf(context);
  const bool ta = GetBoolAttr(attrs, "transpose_a", false);
  const bool tb = GetBoolAttr(attrs, "transpose_b", false);
  const int64_t r = a.rank();
  if (r < 2 || b.rank() != r) {
    return KernelError(kernel, "inputs 'a' ", a.ToString(), " and 'b' ", b.ToString(),
                       " must have the same rank >= 2");
  }
  const int64_t m = a.dim(ta ? r - 1 : r - 2);
  const int64_t k = a.dim(ta ? r - 2 : r - 1);
  const int64_t n = b.dim(tb ? r - 2 : r - 1);
  if (b.dim(tb ? r - 1 : r - 2) != k) {
    return KernelError(kernel, "inner dimensions differ: a ", a.ToString(),
                       " (transpose_a=", ta ? "true" : "false", ") has k=", k, ", b ", b.ToString(),
                       " (transpose_b=", tb ? "true" : "false",
                       ") has k=", b.dim(tb ? r - 1 : r - 2));
  }
  std::vector<int64_t> expected(a.dims().begin(), a.dims().end() - 2);
  int64_t batches = 1;
  for (int64_t axis = 0; axis < r - 2; ++axis) {
    if (b.dim(axis) != a.dim(axis)) {
      return KernelError(kernel, "batch dimensions differ: a ", a.ToString(), " vs b ",
                         b.ToString());
    }
    batches *= a.dim(axis);
  }
  expected.push_back(m);
  expected.push_back(n);
  OF_RETURN_IF_ERROR(CheckShape(kernel, "out", out, Shape(expected), "a's rows by b's columns"));
  if (std::max({m, n, k, a.dim(r - 1), b.dim(r - 1)}) > INT_MAX) {
    return KernelError(kernel, "dimensions of a ", a.ToString(), " and b ", b.ToString(),
                       " exceed the BLAS limit of ", INT_MAX);
  }
  return MatMulDims{ta, tb, batches, m, n, k, static_cast<int>(a.dim(r - 1)),
                    static_cast<int>(b.dim(r - 1))};
}

// Runs the checked product (with the epilogue of bias / relu when given) over the device's
// `pool`: a single product cut by SplitGemm, many batches spread whole (no cut inside one).
void RunMatMul(KernelThreadPool* pool, const MatMulDims& d, const float* a, const float* b, const float* bias,
               bool relu, float* c) {
  const Gemm whole{d.ta, d.tb, d.m, d.n, d.k, a, d.lda, b, d.ldb, c, static_cast<int>(d.n),
                   bias, relu};
  if (d.batches == 1) {
    SplitGemm(pool, whole);
    return;
  }
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t grain = std::max<int64_t>(1, kMinMacsPerPart / std::max<int64_t>(1, m * n * k));
  ParallelFor(pool, d.batches, grain, [&](int64_t first, int64_t last) {
    // Attention's batches: the matmul primitive runs a batch set in one call.
    SgemmBatched(d.ta, d.tb, last - first, m, n, k, a + first * m * k, d.lda, m * k,
                 b + first * k * n, d.ldb, k * n, c + first * m * n, n, m * n);
    // The epilogue over this thread's batches right after their products: the same
    // products as matmul's and the same float add and clamp as bias_add's and relu's, so
    // the result is theirs bit for bit (a per-batch 2-D call could take another backend
    // than the batched one, and round differently).
    if (bias != nullptr || relu) {
      BiasReluInPlace((last - first) * m, n, bias, relu, c + first * m * n, n);
    }
  });
}

// Whether the op computes in bf16 (its compute_dtype attribute); an unknown value is an
// error naming it.
absl::StatusOr<bool> ComputesInBf16(absl::string_view kernel, const KernelContext& context) {
  const AttrMap& attrs = AttrsOf(context);
  const auto found = attrs.find("compute_dtype");
  if (found == attrs.end()) return false;
  const std::string* value = std::get_if<std::string>(&found->second);
  if (value != nullptr && *value == "bf16") return true;
  if (value != nullptr && *value == "f32") return false;
  return KernelError(kernel, "attribute compute_dtype is ",
                     value != nullptr ? "\"" + *value + "\"" : AttrToString(found->second),
                     "; valid: \"f32\", \"bf16\"");
}

// The checked product on bf16-rounded operands, fp32 accumulation (see the file comment).
absl::Status RunBf16MatMul(const MatMulDims& d, const KernelContext& context,
                           const float* bias, bool relu, float* c) {
  const int64_t a_size = context.inputs[0].shape.NumElements();
  const int64_t b_size = context.inputs[1].shape.NumElements();
  // Grown only, never shrunk: resizing up again after a smaller product would zero-fill
  // the difference, one more pass over memory on every change of shape in a step.
  thread_local std::vector<BFloat16> a16, b16;
  if (a16.size() < static_cast<size_t>(a_size)) a16.resize(static_cast<size_t>(a_size));
  if (b16.size() < static_cast<size_t>(b_size)) b16.resize(static_cast<size_t>(b_size));
  ConvertToBFloat16(context.inputs[0].As<const float>(), a_size, a16.data());
  ConvertToBFloat16(context.inputs[1].As<const float>(), b_size, b16.data());
  const int64_t m = d.m, n = d.n, k = d.k;
  if (d.batches == 1) {
    Bf16MatmulBatched(d.ta, d.tb, 1, m, n, k, a16.data(), d.lda, m * k, b16.data(), d.ldb, k * n, bias, relu, c, n);
    return absl::OkStatus();
  }
  const BFloat16* a = a16.data();
  const BFloat16* b = b16.data();
  const int64_t grain = std::max<int64_t>(1, kMinMacsPerPart / std::max<int64_t>(1, m * n * k));
  ParallelFor(context.thread_pool, d.batches, grain, [&](int64_t first, int64_t last) {
    Bf16MatmulBatched(d.ta, d.tb, last - first, m, n, k, a + first * m * k, d.lda, m * k, b + first * k * n, d.ldb,
                      k * n, bias, relu, c + first * m * n, n);
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status MatMul(const KernelContext& context) {
  OF_RETURN_IF_ERROR(CheckArguments(kMatMul, context, {{"a"}, {"b"}}, {{"out"}}));
  OF_ASSIGN_OR_RETURN(const MatMulDims dims, CheckMatMulShapes(kMatMul, context));
  float* c = context.outputs[0].As<float>();
  if (dims.m * dims.n == 0 || dims.batches == 0) return absl::OkStatus();
  if (dims.k == 0) {  // An empty sum; BLAS would also need leading dimensions of at least 1.
    std::fill(c, c + dims.batches * dims.m * dims.n, 0.0f);
    return absl::OkStatus();
  }
  OF_ASSIGN_OR_RETURN(const bool bf16, ComputesInBf16(kMatMul, context));
  if (bf16) return RunBf16MatMul(dims, context, /*bias=*/nullptr, /*relu=*/false, c);
  RunMatMul(context.thread_pool, dims, context.inputs[0].As<const float>(), context.inputs[1].As<const float>(),
            /*bias=*/nullptr, /*relu=*/false, c);
  return absl::OkStatus();
}

absl::Status FusedMatMulBias(const KernelContext& context) {
  OF_RETURN_IF_ERROR(
      CheckArguments(kFusedMatMulBias, context, {{"a"}, {"b"}, {"bias"}}, {{"out"}}));
  OF_ASSIGN_OR_RETURN(const MatMulDims dims, CheckMatMulShapes(kFusedMatMulBias, context));
  OF_RETURN_IF_ERROR(CheckShape(kFusedMatMulBias, "bias", context.inputs[2].shape,
                                Shape{dims.n}, "the product's last dimension"));
  const bool relu = GetBoolAttr(AttrsOf(context), "relu", false);
  const float* bias = context.inputs[2].As<const float>();
  float* c = context.outputs[0].As<float>();
  if (dims.m * dims.n == 0 || dims.batches == 0) return absl::OkStatus();
  if (dims.k == 0) {  // An empty sum: every row is the bias (relu'd).
    SgemmBiasRelu(dims.ta, dims.tb, dims.batches * dims.m, dims.n, 0, nullptr, 1, nullptr, 1,
                  bias, relu, c, dims.n);
    return absl::OkStatus();
  }
  OF_ASSIGN_OR_RETURN(const bool bf16, ComputesInBf16(kFusedMatMulBias, context));
  if (bf16) return RunBf16MatMul(dims, context, bias, relu, c);
  RunMatMul(context.thread_pool, dims, context.inputs[0].As<const float>(), context.inputs[1].As<const float>(),
            bias, relu, c);
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
