// Gradients of the mixture-of-experts ops (docs/moe.md). Routing (index, slot) is
// integer: no gradient flows into it, and moe_route's outputs are piecewise constant in
// probs, so its gradient is none at all; probs get their gradient through moe_combine
// (the gate weights) and moe_aux_loss.
#include <string>
#include <variant>

#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {
namespace {

// The forward's parallel attribute, passed on so the backward products keep its layout.
std::string Parallel(const GradientContext& ctx) {
  auto it = ctx.attrs->find("parallel");
  if (it == ctx.attrs->end()) return "data";
  const std::string* value = std::get_if<std::string>(&it->second);
  return value != nullptr ? *value : "data";
}

}  // namespace

// index, slot and dropped are constant almost everywhere in probs (they change only
// where two probabilities cross): their derivative is zero, so no gradient reaches probs
// from here. Listed (rather than absent) so a loss that adds `dropped` still differentiates.
std::vector<Tensor> MoeRouteGradient(const GradientContext&) { return {Tensor()}; }

std::vector<Tensor> MoeDispatchGradient(const GradientContext& ctx) {
  return {MoeDispatchGrad(ctx.output_grads[0], ctx.inputs[1], ctx.inputs[2], ctx.location),
          Tensor(), Tensor()};
}

// out[b, e] = buf[b, e] . w[e]:  dbuf = dout . w^T,  dw = sum_b buf^T . dout.
std::vector<Tensor> ExpertMatMulGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const std::string parallel = Parallel(ctx);
  return {ExpertMatMulGradData(dout, ctx.inputs[1], parallel, ctx.location),
          ExpertMatMulGradWeight(ctx.inputs[0], dout, parallel, ctx.location)};
}

std::vector<Tensor> MoeCombineGradient(const GradientContext& ctx) {
  const Tensor dy = ctx.output_grads[0];
  const Tensor ybuf = ctx.inputs[0], probs = ctx.inputs[1];
  const Tensor index = ctx.inputs[2], slot = ctx.inputs[3];
  return {MoeCombineGradBuf(dy, probs, index, slot, ybuf.shape().dim(2), ctx.location),
          MoeCombineGradProbs(dy, ybuf, index, slot, ctx.location), Tensor(), Tensor()};
}

std::vector<Tensor> MoeAuxLossGradient(const GradientContext& ctx) {
  return {MoeAuxLossGrad(ctx.output_grads[0], ctx.inputs[0], ctx.location)};
}

}  // namespace gradients
}  // namespace oneflow
