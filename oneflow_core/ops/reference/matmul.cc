// Reference matmul: out[..., i, j] = sum_k op(a)[..., i, k] * op(b)[..., k, j], op the
// transpose of the last two axes when transpose_a / transpose_b. fused_matmul_bias adds
// bias[j] to that sum and, with relu, takes max(0, .).
#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace reference {

Outputs MatMul(const KernelArgs& args) {
  const bool ta = GetBoolAttr(args.attrs, "transpose_a", false);
  const bool tb = GetBoolAttr(args.attrs, "transpose_b", false);
  const Dense& a = args.in(0);
  const Dense& b = args.in(1);
  const int64_t r = a.shape.rank();
  const int64_t k_size = a.shape.dim(ta ? r - 2 : r - 1);
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, out.shape);
    std::vector<int64_t> ca = c, cb = c;
    double sum = 0;
    for (int64_t k = 0; k < k_size; ++k) {
      ca[ta ? r - 1 : r - 2] = c[r - 2];
      ca[ta ? r - 2 : r - 1] = k;
      cb[tb ? r - 1 : r - 2] = k;
      cb[tb ? r - 2 : r - 1] = c[r - 1];
      sum += a.values[Ravel(ca, a.shape)] * b.values[Ravel(cb, b.shape)];
    }
    out.values[i] = sum;
  }
  return std::vector<Dense>{out};
}

Outputs FusedMatMulBias(const KernelArgs& args) {
  OF_ASSIGN_OR_RETURN(std::vector<Dense> product, MatMul(args));
  const bool relu = GetBoolAttr(args.attrs, "relu", false);
  const Dense& bias = args.in(2);
  Dense& out = product[0];
  const int64_t n = out.shape.dim(out.shape.rank() - 1);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    const double value = out.values[i] + bias.values[i % n];
    out.values[i] = relu && !(value > 0) ? 0.0 : value;  // NaN -> 0, as the reference relu
  }
  return product;
}

}  // namespace reference
}  // namespace oneflow
