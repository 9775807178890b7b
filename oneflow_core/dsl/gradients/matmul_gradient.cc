// matmul: out = op(a) . op(b), op a transpose of the last two axes when the attribute
// says so. Each case picks the product that gives the gradient in the input's own
// layout, so no extra transpose ops are needed:
//   a . b      da = dout . b^T      db = a^T . dout
//   a . b^T    da = dout . b        db = dout^T . a
//   a^T . b    da = b . dout^T      db = a . dout
//   a^T . b^T  da = b^T . dout^T    db = dout^T . a^T
#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {

std::vector<Tensor> MatMulGradient(const GradientContext& ctx) {
  const bool ta = GetBoolAttr(*ctx.attrs, "transpose_a", false);
  const bool tb = GetBoolAttr(*ctx.attrs, "transpose_b", false);
  const Tensor a = ctx.inputs[0];
  const Tensor b = ctx.inputs[1];
  const Tensor dout = ctx.output_grads[0];
  const Loc at = ctx.location;
  if (!ta && !tb) return {MatMul(dout, b, false, true, at), MatMul(a, dout, true, false, at)};
  if (!ta && tb) return {MatMul(dout, b, false, false, at), MatMul(dout, a, true, false, at)};
  if (ta && !tb) return {MatMul(b, dout, false, true, at), MatMul(a, dout, false, false, at)};
  return {MatMul(b, dout, true, true, at), MatMul(dout, a, true, true, at)};
}

}  // namespace gradients
}  // namespace oneflow
